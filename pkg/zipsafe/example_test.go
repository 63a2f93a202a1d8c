package zipsafe_test

import (
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// Pack a workspace (leaving out its reserved index file), restore it into
// another directory while keeping that directory's own index file, and
// refuse a zip-slip archive.
func Example() {
	base, err := os.MkdirTemp("", "zipsafe-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)
	src := filepath.Join(base, "src")
	os.MkdirAll(filepath.Join(src, "notes"), 0o755)
	os.WriteFile(filepath.Join(src, "notes", "todo.md"), []byte("- ship it\n"), 0o644)
	os.WriteFile(filepath.Join(src, ".index"), []byte("source index\n"), 0o600)

	root, err := os.OpenRoot(src)
	if err != nil {
		log.Fatal(err)
	}
	defer root.Close()
	archive, err := os.Create(filepath.Join(base, "ws.zip"))
	if err != nil {
		log.Fatal(err)
	}
	ws, err := zipsafe.Write(archive, root, zipsafe.WriteOptions{
		Exclude: func(rel string, _ fs.DirEntry) bool { return rel == ".index" },
	})
	if err := archive.Close(); err != nil {
		log.Fatal(err)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %d files, %d dirs, %d bytes\n", ws.Files, ws.Dirs, ws.Bytes)

	target := filepath.Join(base, "workspace")
	os.MkdirAll(target, 0o700)
	os.WriteFile(filepath.Join(target, ".index"), []byte("target index\n"), 0o600)
	es, err := zipsafe.ExtractFile(archive.Name(), target, zipsafe.ExtractOptions{Keep: []string{".index"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("extracted %d files, %d dirs, %d bytes\n", es.Files, es.Dirs, es.Bytes)
	todo, _ := os.ReadFile(filepath.Join(target, "notes", "todo.md"))
	index, _ := os.ReadFile(filepath.Join(target, ".index"))
	fmt.Printf("%s%s", todo, index)

	_, err = zipsafe.ExtractFile("testdata/hostile/zipslip_dotdot.zip", target, zipsafe.ExtractOptions{})
	fmt.Println(zipsafe.CodeOf(err))
	fmt.Println(err)
	// Output:
	// wrote 1 files, 1 dirs, 10 bytes
	// extracted 1 files, 1 dirs, 10 bytes
	// - ship it
	// target index
	// unsafe_path
	// zipsafe: unsafe_path: entry "../evil.txt": ".." path component
}
