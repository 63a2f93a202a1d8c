//go:build ignore

// replay.go is an MCP server that does no work: it answers each request
// line of its input with the next line of a file of responses captured
// from a real server for the same calls (bench.sh captures agentstore
// mcp's), and skips notifications. A client timed against it measures
// its own share of a call's latency: its encoding of the request, the
// pipe both ways and its handling of the response.
//
//	go build -o replay interop/mcp/replay.go
//	replay RESPONSES.jsonl
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: replay RESPONSES.jsonl")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
	responses := bytes.SplitAfter(data, []byte("\n"))
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return // the client closed its end
		}
		// The TypeScript client writes a request's id as `,"id":N`
		// after its method and params; a notification has none.
		if !bytes.Contains(line, []byte(`,"id":`)) {
			continue
		}
		if len(responses) == 0 || len(responses[0]) == 0 {
			fmt.Fprintln(os.Stderr, "replay: more requests than captured responses")
			os.Exit(1)
		}
		if _, err := os.Stdout.Write(responses[0]); err != nil {
			return
		}
		responses = responses[1:]
	}
}
