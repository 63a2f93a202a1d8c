package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// inspectShown is how many entries InspectDir names in Contents.Found.
const inspectShown = 4

// InspectDir is the Inspector of file locations: it reports whether
// loc.Root exists, whether it is an empty directory, and what it holds
// (a few entry names, in order). A path that is not a directory, or a
// symbolic link, exists and is described as such, except a symbolic link,
// which is refused (CodeUnsafeStore) naming the directory it points to:
// a store root is opened only where it really is, so that nobody swaps it
// under a running command. It only reads.
func InspectDir(ctx context.Context, loc Location) (Contents, error) {
	const op = "open"
	if err := CheckContext(ctx, op); err != nil {
		return Contents{}, err
	}
	fi, err := os.Lstat(loc.Root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		what := "nothing is there"
		if p, perr := os.Lstat(filepath.Dir(loc.Root)); perr != nil || !p.IsDir() {
			what = fmt.Sprintf("nothing is there (not even %s)", filepath.Dir(loc.Root))
		}
		return Contents{Found: what}, nil
	case err != nil:
		return Contents{}, fsError(op, loc.Root, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return Contents{}, symlinkRoot(op, loc.Root)
	case !fi.IsDir():
		return Contents{Exists: true, Found: "a " + kindOf(fi.Mode()) + ", not a directory"}, nil
	}
	d, err := os.Open(loc.Root)
	if err != nil {
		return Contents{}, fsError(op, loc.Root, err)
	}
	defer d.Close()
	// Read a bounded number of entries: /etc or a scratch root may hold
	// many, and only a few are named.
	entries, err := d.ReadDir(256)
	if err != nil && !errors.Is(err, io.EOF) {
		return Contents{}, fsError(op, loc.Root, err)
	}
	more := false
	if len(entries) == 256 {
		if next, _ := d.ReadDir(1); len(next) > 0 {
			more = true
		}
	}
	if len(entries) == 0 {
		return Contents{Exists: true, Empty: true, Found: "nothing (an empty directory)"}, nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
		if len(names[i]) == 64 && isLowerHex(names[i]) {
			names[i] = names[i][:12] + "…"
		}
		if e.IsDir() {
			names[i] += "/"
		}
	}
	slices.Sort(names)
	shown := names[:min(inspectShown, len(names))]
	found := "a directory holding " + strings.Join(shown, ", ")
	if rest := len(names) - len(shown); rest > 0 || more {
		plus := ""
		if more {
			plus = "+"
		}
		found += fmt.Sprintf(" and %d%s more", rest, plus)
	}
	return Contents{Exists: true, Found: found}, nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// kindOf names a file mode's type for messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// fsError classifies an operating-system error about path.
func fsError(op, path string, err error) *Error {
	code := CodeIO
	if errors.Is(err, fs.ErrPermission) {
		code = CodePermission
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return Errorf(code, op, err, "%s", path)
}

// IsDir reports whether path is a real directory (not a symbolic link).
// Layouts use it to detect their markers.
func IsDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// symlinkRoot is the error for a store root that is a symbolic link: it
// names the directory the link resolves to as the --store to give, or
// says that the link leads nowhere.
func symlinkRoot(op, root string) error {
	target, err := filepath.EvalSymlinks(root)
	if err != nil {
		return Errorf(CodeUnsafeStore, op, nil, "%s is a symbolic link, not a directory, and it leads nowhere readable (%v)", root, errors.Unwrap(err))
	}
	if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
		return Errorf(CodeUnsafeStore, op, nil, "%s is a symbolic link, not a directory (it points to %s, which is not a directory)", root, target)
	}
	return Errorf(CodeUnsafeStore, op, nil, "%s is a symbolic link, not a directory: stores are opened only at a real directory; use --store %s, the directory it points to", root, target)
}
