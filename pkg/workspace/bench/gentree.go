// Package bench generates the file trees the workspace benchmarks (and
// compare.sh, which times zip and unzip on the same tree) run on.
package bench

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// GenTree writes a deterministic tree of files regular files totalling
// about bytes bytes under dir (created): 100 files per directory, two
// levels deep, text-like content (words from a fixed vocabulary, so it
// compresses about 3:1 like source and logs do), sizes varying between half
// and one and a half times the mean, every 97th file empty and every 50th
// executable.
func GenTree(dir string, files int, bytes int64) error {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 2048)
	for i := range vocab {
		n := 2 + rng.IntN(9)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		vocab[i] = string(b)
	}
	mean := bytes / int64(max(files, 1))
	for i := range files {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/1000), fmt.Sprintf("e%02d", (i/100)%10))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		perm := os.FileMode(0o644)
		if i%50 == 0 {
			perm = 0o755
		}
		size := mean/2 + rng.Int64N(mean+1)
		if i%97 == 0 {
			size = 0
		}
		if err := writeText(filepath.Join(sub, fmt.Sprintf("f%05d.txt", i)), size, perm, rng, vocab); err != nil {
			return err
		}
	}
	return nil
}

func writeText(p string, size int64, perm os.FileMode, rng *rand.Rand, vocab []string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	var n int64
	col := 0
	for n < size {
		word := vocab[rng.IntN(len(vocab))]
		sep := byte(' ')
		if col += len(word) + 1; col > 72 {
			sep, col = '\n', 0
		}
		chunk := int64(len(word) + 1)
		if n+chunk > size {
			word = word[:min(int64(len(word)), size-n)]
			chunk = int64(len(word))
			w.WriteString(word)
		} else {
			w.WriteString(word)
			w.WriteByte(sep)
		}
		n += chunk
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
