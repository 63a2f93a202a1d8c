package checkpoint

import "io/fs"

// EntryKind names the type of an entry for reports: "file", "directory",
// "symlink", "fifo", "socket", "device", "char_device" or "other".
func EntryKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "char_device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "other"
}
