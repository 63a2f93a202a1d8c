// Command agentstore inspects and maintains agent artifact stores and the
// per-session scratch workspaces next to them. See cmd for the commands.
package main

import (
	"os"

	"github.com/agentstore/agentstore/cmd"
)

func main() { os.Exit(cmd.Main()) }
