//go:build !unix

package zipsafe

import "os"

// dirCache creates the files of the new tree through an os.Root for the
// directory it created the last file in.
type dirCache struct {
	root *os.Root
	dir  string
	sub  *os.Root
}

func (c *dirCache) close() {
	if c.sub != nil {
		c.sub.Close()
		c.sub, c.dir = nil, ""
	}
}

// create creates base in dir (relative to the root; name is dir/base)
// with mode perm.
func (c *dirCache) create(dir, base, _ string, perm os.FileMode) (fileWriter, error) {
	d := c.root
	if dir != "" {
		if c.sub == nil || c.dir != dir {
			c.close()
			sub, err := c.root.OpenRoot(dir)
			if err != nil {
				return nil, err
			}
			c.sub, c.dir = sub, dir
		}
		d = c.sub
	}
	return d.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}
