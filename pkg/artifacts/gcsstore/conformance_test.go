package gcsstore_test

import (
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// TestConformance runs the adapter conformance suite against the
// in-process emulator, the concurrency case at full size (8 writers x 50
// puts to one name).
func TestConformance(t *testing.T) {
	artifactstest.Run(t, artifactstest.Harness{
		New: func(t *testing.T) artifacts.Store {
			s, _ := newStore(t, gcsstore.Options{})
			return s
		},
		NewWithLimit: func(t *testing.T, limit int64) artifacts.Store {
			s, _ := newStore(t, gcsstore.Options{MaxArtifactBytes: limit})
			return s
		},
		CorruptPayload: func(t *testing.T, st artifacts.Store, scope artifacts.Scope, name string, v int64) {
			s := st.(*gcsstore.Store)
			obj := s.ObjectName(scope, name, v, gcsstore.SuffixData)
			b := readObject(t, s, obj)
			if len(b) == 0 {
				t.Fatalf("payload %s is empty", obj)
			}
			b[len(b)/2] ^= 0x01
			overwrite(t, s, obj, b)
		},
		CorruptRecord: func(t *testing.T, st artifacts.Store, scope artifacts.Scope, name string, v int64) {
			s := st.(*gcsstore.Store)
			overwrite(t, s, s.ObjectName(scope, name, v, gcsstore.SuffixMeta), []byte("\x83garbage"))
		},
	})
}
