package gcsstore_test

import (
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// suiteOptions are the options the conformance suite runs with: the
// defaults, except MaxRecordBytes. The layout caps a Cloud Storage record
// at 16,384 bytes, which is also the cap on custom metadata alone, so the
// suite's "metadata of exactly 16,384 bytes" case cannot be stored at the
// default; the suite runs with the reader's limit instead, and
// TestRecordLimit checks the default.
var suiteOptions = gcsstore.Options{MaxRecordBytes: artifacts.MaxRecordFileBytes}

// TestConformance runs the quick subtests of the conformance suite
// (artifactstest.QuickSubtests) against the in-process emulator: the main
// paths and the failure paths of the driver, in the default test tier.
// TestConformanceEmulator runs the whole suite in the integration tier.
func TestConformance(t *testing.T) {
	h := harness()
	h.Subtests = artifactstest.QuickSubtests
	artifactstest.Run(t, h)
}

// harness is the conformance suite's harness for the driver: stores on the
// in-process emulator, damaged by writing to their objects.
func harness() artifactstest.Harness {
	return artifactstest.Harness{
		New: func(t *testing.T) artifacts.Driver {
			s, _ := newStore(t, suiteOptions)
			return s
		},
		NewWithLimit: func(t *testing.T, limit int64) artifacts.Driver {
			opts := suiteOptions
			opts.MaxArtifactBytes = limit
			s, _ := newStore(t, opts)
			return s
		},
		CorruptPayload: func(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, v int64) {
			var s *gcsstore.Store
			st.As(&s)
			obj := s.ObjectName(scope, name, v, gcsstore.SuffixData)
			b := readObject(t, s, obj)
			if len(b) == 0 {
				t.Fatalf("payload %s is empty", obj)
			}
			b[len(b)/2] ^= 0x01
			overwrite(t, s, obj, b)
		},
		CorruptRecord: func(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, v int64) {
			var s *gcsstore.Store
			st.As(&s)
			overwrite(t, s, s.ObjectName(scope, name, v, gcsstore.SuffixMeta), []byte("\x83garbage"))
		},
	}
}
