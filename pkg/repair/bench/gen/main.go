// Command gen writes a large filesystem store for the repair and verify
// benchmarks (see ../compare.sh):
//
//	go run ./pkg/repair/bench/gen -files 1000000 -payload 4096 ROOT
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/agentstore/agentstore/pkg/repair/internal/gen"
)

func main() {
	files := flag.Int("files", 1_000_000, "files to write in name directories (3 per version)")
	payload := flag.Int("payload", 4096, "bytes per payload")
	scopes := flag.Int("scopes", 100, "number of scopes")
	perName := flag.Int("versions", 10, "versions per name")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gen [-files N] [-payload BYTES] ROOT")
		os.Exit(2)
	}
	start := time.Now()
	st, err := gen.Generate(flag.Arg(0), gen.Options{Files: *files, PayloadBytes: *payload, Scopes: *scopes, VersionsPerName: *perName})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %d files (%d versions in %d name directories, %d payload bytes) in %s\n",
		st.Files, st.Versions, st.NameDirs, st.PayloadBytes, time.Since(start).Round(time.Millisecond))
}
