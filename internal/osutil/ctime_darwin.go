package osutil

import (
	"os"
	"syscall"
)

// ChangeTime returns the status change time of fi in nanoseconds since the
// epoch, 0 where it is not known.
func ChangeTime(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctimespec.Sec*1e9 + st.Ctimespec.Nsec
	}
	return 0
}
