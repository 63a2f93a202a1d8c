//go:build unix

package osutil

import (
	"os"
	"syscall"
)

// DupFile returns a new *os.File on a duplicate of f's descriptor. A
// directory opened through an os.Root lists its entries with an Lstat
// each; its duplicate lists them with the types the directory reports,
// without one. The duplicate's name is f's; never resolve paths by it.
func DupFile(f *os.File) (*os.File, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var derr error
	if err := sc.Control(func(fd uintptr) { nfd, derr = syscall.Dup(int(fd)) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	syscall.CloseOnExec(nfd)
	return os.NewFile(uintptr(nfd), f.Name()), nil
}
