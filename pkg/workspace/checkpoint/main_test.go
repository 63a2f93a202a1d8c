package checkpoint_test

import (
	"os"
	"testing"
)

// crashChild runs this test binary as the child process of a crash test
// when the environment asks for one, and reports whether it did. The crash
// tests (crash_test.go, build tag crash) set it; otherwise it is nil.
var crashChild func() (code int, ok bool)

func TestMain(m *testing.M) {
	if crashChild != nil {
		if code, ok := crashChild(); ok {
			os.Exit(code)
		}
	}
	os.Exit(m.Run())
}
