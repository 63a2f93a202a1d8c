// Command gentree writes the benchmark tree of package bench:
//
//	go run ./pkg/workspace/bench/gentree -files 10000 -bytes 200000000 DIR
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/agentstore/agentstore/pkg/workspace/bench"
)

func main() {
	files := flag.Int("files", 10000, "number of files")
	bytes := flag.Int64("bytes", 200_000_000, "total bytes (about)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gentree [-files N] [-bytes B] DIR")
		os.Exit(2)
	}
	if err := bench.GenTree(flag.Arg(0), *files, *bytes); err != nil {
		fmt.Fprintln(os.Stderr, "gentree:", err)
		os.Exit(1)
	}
}
