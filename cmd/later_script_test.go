package cmd

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
)

// agentstore-later DURATION ARGS... runs agentstore ARGS with its clock
// DURATION ahead: what it would do that much later, with nothing touched
// meanwhile (a workspace left idle, say), without waiting and without
// changing any file's times.
func init() {
	scriptPrograms["agentstore-later"] = mainLater
}

func mainLater() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: agentstore-later DURATION ARGS...")
		os.Exit(2)
	}
	d, err := time.ParseDuration(os.Args[1])
	if err != nil || d <= 0 {
		fmt.Fprintf(os.Stderr, "agentstore-later: %q is not a positive duration\n", os.Args[1])
		os.Exit(2)
	}
	f := cmdutil.NewFactory(iostreams.System())
	f.Now = func() time.Time { return time.Now().Add(d) }
	os.Exit(Run(context.Background(), f, os.Args[2:]))
}
