package cmdutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// lockErr is what a lock package returns: any error with ErrorCode "locked".
type lockErr struct{}

func (lockErr) Error() string     { return "store is locked by pid 42" }
func (lockErr) ErrorCode() string { return "locked" }

func TestExitCode(t *testing.T) {
	aerr := func(c artifacts.Code) error { return artifacts.Errorf(c, "op", nil, "detail") }
	tests := []struct {
		name string
		err  error
		code string
		exit int
	}{
		{"nil", nil, "", 0},
		{"plain", errors.New("boom"), "unknown", 1},
		{"usage", Usagef("bad %s", "flag"), "usage_error", 2},
		{"wrapped usage", fmt.Errorf("ctx: %w", Usagef("bad")), "usage_error", 2},
		{"usage with code", &UsageError{Code: "invalid_scope", Err: errors.New("x")}, "invalid_scope", 2},
		{"config", &UsageError{Code: CodeConfigError, Err: errors.New("x")}, "config_error", 2},
		{"invalid_scope", aerr(artifacts.CodeInvalidScope), "invalid_scope", 2},
		{"invalid_name", aerr(artifacts.CodeInvalidName), "invalid_name", 2},
		{"invalid_mime_type", aerr(artifacts.CodeInvalidMIMEType), "invalid_mime_type", 2},
		{"invalid_metadata", aerr(artifacts.CodeInvalidMetadata), "invalid_metadata", 2},
		{"invalid_argument", aerr(artifacts.CodeInvalidArgument), "invalid_argument", 2},
		{"not_found", aerr(artifacts.CodeNotFound), "not_found", 1},
		{"corrupt", aerr(artifacts.CodeCorrupt), "corrupt_artifact", 1},
		{"quota", aerr(artifacts.CodeQuotaExceeded), "quota_exceeded", 1},
		{"not_persisted", aerr(artifacts.CodeNotPersisted), "not_persisted", 1},
		{"problems", &ProblemsFound{Msg: "2 corrupt"}, "problems_found", 3},
		{"wrapped problems", fmt.Errorf("fs verify: %w", &ProblemsFound{Msg: "2 corrupt"}), "problems_found", 3},
		{"confirmation", &ConfirmationError{Msg: "confirm"}, "confirmation_required", 4},
		{"stale", &ConfirmationError{Stale: true, Msg: "stale"}, "stale_confirmation", 4},
		{"locked", &LockedError{Msg: "locked"}, "locked", 5},
		{"foreign lock error", fmt.Errorf("sweep: %w", lockErr{}), "locked", 5},
		{"conflict", aerr(artifacts.CodeConflict), "conflict", 6},
		{"wrapped conflict", fmt.Errorf("ws snapshot: %w", aerr(artifacts.CodeConflict)), "conflict", 6},
		{"unsupported store", CodedError(CodeUnsupportedStore, errors.New("no")), "unsupported_store", 1},
		{"unsupported", aerr(artifacts.CodeUnsupported), "unsupported", 1},
		{"timeout", context.DeadlineExceeded, "timeout", 1},
		{"canceled", context.Canceled, "canceled", 1},
		{"os not exist", fmt.Errorf("open: %w", os.ErrNotExist), "not_found", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorCode(tt.err); got != tt.code {
				t.Errorf("ErrorCode = %q, want %q", got, tt.code)
			}
			if got := ExitCode(tt.err); got != tt.exit {
				t.Errorf("ExitCode = %d, want %d", got, tt.exit)
			}
		})
	}
}

func TestAsUsageError(t *testing.T) {
	for _, msg := range []string{
		`unknown command "x" for "agentstore"`,
		"unknown flag: --x",
		"unknown shorthand flag: 'x' in -x",
		`required flag(s) "name" not set`,
		"accepts 1 arg(s), received 2",
		"requires at least 1 arg(s), only received 0",
		"if any flags in the group [a b] are set none of the others can be; [a b] were all set",
	} {
		err := AsUsageError(errors.New(msg), nil)
		if ExitCode(err) != ExitUsage {
			t.Errorf("%q: exit %d, want 2", msg, ExitCode(err))
		}
	}
	plain := errors.New("open /x: permission denied")
	if AsUsageError(plain, nil) != plain {
		t.Error("other errors must pass through")
	}
	if AsUsageError(nil, nil) != nil {
		t.Error("nil must stay nil")
	}
}

func TestPrintErrorJSON(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	PrintError(ios, artifacts.Errorf(artifacts.CodeNotFound, "get", nil, `no <artifact> "a"`), true)
	if out.Len() != 0 {
		t.Errorf("stdout = %q", out)
	}
	s := errOut.String()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Fatalf("want exactly one line, got %q", s)
	}
	var got map[string]map[string]string
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got["error"]) != 2 {
		t.Fatalf("shape = %v", got)
	}
	if got["error"]["code"] != "not_found" || got["error"]["message"] != `artifacts: get: no <artifact> "a"` {
		t.Errorf("error = %v", got["error"])
	}
	if !strings.Contains(s, "<artifact>") {
		t.Errorf("HTML escaping must be off: %q", s)
	}
}

func TestPrintErrorText(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	PrintError(ios, errors.New("boom"), false)
	if errOut.String() != "agentstore: boom\n" {
		t.Errorf("plain = %q", errOut)
	}
	errOut.Reset()
	PrintError(ios, &UsageError{Err: errors.New("bad flag"), CommandPath: "agentstore ws list"}, false)
	want := "agentstore: bad flag\nRun 'agentstore ws list --help' for usage.\n"
	if errOut.String() != want {
		t.Errorf("usage = %q, want %q", errOut, want)
	}
	errOut.Reset()
	PrintError(ios, artifacts.Errorf(artifacts.CodeInvalidName, "put", nil, "bad name"), false)
	if !strings.HasSuffix(errOut.String(), "Run 'agentstore --help' for usage.\n") {
		t.Errorf("invalid_name = %q", errOut)
	}
	errOut.Reset()
	PrintError(ios, nil, false)
	if errOut.Len() != 0 {
		t.Errorf("nil printed %q", errOut)
	}
}
