package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// ReadConfirmFile reads a plan given back with --confirm-file PATH through
// read: from in (standard input) when path is "-", else from the file. A
// file that cannot be opened is a usage error naming the flag; read's
// errors are returned as they are.
func ReadConfirmFile[T any](in io.Reader, path string, read func(io.Reader) (T, error)) (T, error) {
	if path == "-" {
		return read(in)
	}
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, &UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("--confirm-file: %v", err)}
	}
	defer f.Close()
	return read(f)
}

// ConfirmUsage makes a confirmation that is neither a plan_id nor a plan
// (a *plan.ParseError) a usage error (exit status 2); other errors pass
// unchanged.
func ConfirmUsage(err error) error {
	var pe *plan.ParseError
	if errors.As(err, &pe) {
		return &UsageError{Code: string(artifacts.CodeInvalidArgument), Err: err}
	}
	return err
}

// ReadConfirmation returns the plan a command is given back to execute:
// --confirm VALUE (set when the flag was given, even empty) parsed by
// parse, or else --confirm-file PATH read by read (see ReadConfirmFile);
// nil when neither flag was given. A confirmation that is neither a
// plan_id nor a plan is a usage error (ConfirmUsage).
func ReadConfirmation[T any](set bool, value, file string, in io.Reader, parse func(string) (T, error), read func(io.Reader) (T, error)) (*T, error) {
	var c T
	var err error
	switch {
	case set:
		c, err = parse(value)
	case file != "":
		c, err = ReadConfirmFile(in, file, read)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, ConfirmUsage(err)
	}
	return &c, nil
}
