package shardedfs_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/shardedfs"
)

// benchShards is the size of the store BenchmarkWalk10kShards lists.
const benchShards = 10000

var bigStore struct {
	once sync.Once
	root string
	err  error
}

// tenThousandShards builds, once per test process, a sharded store of
// benchShards session scopes holding one name (one version) each: one
// shard is written by Put; the others are the same files written directly
// (without fsync, to keep the set-up short), each with its own scope, hash
// and record, exactly as Put lays them out.
func tenThousandShards(b *testing.B) string {
	bigStore.once.Do(func() {
		dir, err := os.MkdirTemp("", "shardedfs-bench-")
		if err != nil {
			bigStore.err = err
			return
		}
		bigStore.root = dir
		payload := []byte("one small payload\n")
		sum := sha256.Sum256(payload)
		nh := artifacts.NameHash("log.txt")
		for i := range benchShards {
			sc := artifacts.SessionScope("bench", "user", fmt.Sprintf("s-%05d", i))
			h := sc.Hash()
			scopes := filepath.Join(dir, shardedfs.ShardsDir, h, fsstore.LayoutDir, fsstore.ScopesDir)
			names := filepath.Join(scopes, h, fsstore.NamesDir)
			nd := filepath.Join(names, nh)
			if err := os.MkdirAll(nd, 0o700); err != nil {
				bigStore.err = err
				return
			}
			rec := artifacts.Record{Scope: sc, Name: "log.txt", Version: 1, Size: int64(len(payload)), Digest: artifacts.DigestHex(sum[:]), MIMEType: "text/plain", CreatedAt: time.Now().UnixMilli(), Metadata: artifacts.Metadata{}}
			meta, err := artifacts.EncodeRecordCompressed(rec)
			if err != nil {
				bigStore.err = err
				return
			}
			for p, b := range map[string][]byte{
				filepath.Join(scopes, fsstore.SlotFile(fsstore.ScopeSlotPrefix, 1)): []byte(h),
				filepath.Join(names, fsstore.SlotFile(fsstore.NameSlotPrefix, 1)):   []byte(nh),
				filepath.Join(nd, fsstore.VersionFile(1, "reserve")):                nil,
				filepath.Join(nd, fsstore.VersionFile(1, "data")):                   payload,
				filepath.Join(nd, fsstore.VersionFile(1, "meta")):                   meta,
			} {
				if err := os.WriteFile(p, b, 0o600); err != nil {
					bigStore.err = err
					return
				}
			}
		}
	})
	if bigStore.err != nil {
		b.Fatal(bigStore.err)
	}
	return bigStore.root
}

// BenchmarkWalk10kShards is the store-wide listing of a sharded store with
// 10,000 shards of one name each (what `agentstore artifacts list`
// without a scope does): a Store opened afresh each time, as each command
// line run does.
func BenchmarkWalk10kShards(b *testing.B) {
	root := tenThousandShards(b)
	b.ResetTimer()
	for b.Loop() {
		s, err := shardedfs.Open(root, shardedfs.Options{})
		if err != nil {
			b.Fatal(err)
		}
		scopes, versions := 0, 0
		err = s.Walk(context.Background(), func(u artifacts.ScopeUsage) error {
			scopes++
			for _, n := range u.Names {
				versions += len(n.Records)
				if len(n.Problems) > 0 {
					b.Fatalf("problems: %+v", n.Problems)
				}
			}
			return nil
		})
		if err != nil || scopes != benchShards || versions != benchShards {
			b.Fatalf("walk: %d scopes, %d versions, %v", scopes, versions, err)
		}
	}
}

// TestMain removes the benchmark's store after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if bigStore.root != "" {
		os.RemoveAll(bigStore.root)
	}
	os.Exit(code)
}
