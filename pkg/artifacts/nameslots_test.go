package artifacts_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/gcstest"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/artifacts/shardedfs"
)

// TestNameSlots: every layout with name ceilings counts the names a
// scope ever held, deleted ones included; the others say they keep no
// count.
func TestNameSlots(t *testing.T) {
	ctx := context.Background()
	open := map[string]func(t *testing.T) artifacts.Driver{
		"erlang-fs": func(t *testing.T) artifacts.Driver {
			st, err := fsstore.Open(t.TempDir(), fsstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"erlang-fs-sharded": func(t *testing.T) artifacts.Driver {
			st, err := shardedfs.Open(t.TempDir(), shardedfs.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"erlang-gcs": func(t *testing.T) artifacts.Driver {
			st, err := gcsstore.Open(ctx, gcstest.Client(t, "b"), "b", "", gcsstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"memory": func(t *testing.T) artifacts.Driver {
			st, err := memstore.New(memstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
	scope := artifacts.UserScope("app", "u")
	for name, mk := range open {
		t.Run(name, func(t *testing.T) {
			st := artifacts.NewStore(mk(t))
			if n, err := st.NameSlots(ctx, scope); err != nil || n != 0 {
				t.Fatalf("a scope never held: %d, %v", n, err)
			}
			for _, nm := range []string{"a", "b", "c"} {
				if _, err := st.Put(ctx, scope, nm, strings.NewReader(nm), artifacts.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.Put(ctx, scope, "a", strings.NewReader("again"), artifacts.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Delete(ctx, scope, "b", artifacts.Selector{Kind: artifacts.SelectAll}); err != nil {
				t.Fatal(err)
			}
			if n, err := st.NameSlots(ctx, scope); err != nil || n != 3 {
				t.Fatalf("3 names, one deleted: %d, %v", n, err)
			}
			if n, err := st.NameSlots(ctx, artifacts.UserScope("app", "other")); err != nil || n != 0 {
				t.Fatalf("another scope: %d, %v", n, err)
			}
		})
	}
	t.Run("google-adk-file", func(t *testing.T) {
		a, err := adkfile.Open(t.TempDir(), adkfile.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = artifacts.NewStore(a).NameSlots(ctx, scope)
		if artifacts.CodeOf(err) != artifacts.CodeUnsupported {
			t.Fatalf("google-adk-file: %v, want unsupported", err)
		}
	})
	_, err := artifacts.NewStore(open["memory"](t)).NameSlots(ctx, artifacts.Scope{Kind: artifacts.KindUser})
	if artifacts.CodeOf(err) != artifacts.CodeInvalidScope {
		t.Fatalf("invalid scope: %v", err)
	}
}
