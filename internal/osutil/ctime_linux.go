package osutil

import (
	"os"
	"syscall"
)

// ChangeTime returns the status change time of fi in nanoseconds since the
// epoch, 0 where it is not known.
func ChangeTime(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	return 0
}
