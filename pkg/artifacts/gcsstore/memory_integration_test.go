//go:build integration

package gcsstore_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// TestPutMemoryFlat checks that a put's and a get's client-side heap does
// not grow with the payload: a 64 MiB payload needs no more than an 8 MiB
// one (with the default 8 MiB chunk), plus slack. The emulator runs in a
// child process so that its copy of the object is not counted. It moves
// 144 MiB: a minute under -race, hence the integration tier.
func TestPutMemoryFlat(t *testing.T) {
	s := openStore(t, newClient(t, externalEmulator(t)), gcsstore.Options{})
	ctx := context.Background()
	sc := artifacts.AppScope("memory")
	peaks := map[int64][2]uint64{}
	for _, size := range []int64{8 << 20, 64 << 20} {
		var put, get uint64
		put = peakHeap(func() {
			if _, err := s.Put(ctx, sc, fmt.Sprint(size), &pattern{n: size}, artifacts.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		})
		get = peakHeap(func() {
			r, err := s.Get(ctx, sc, fmt.Sprint(size), artifacts.Latest)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if n, err := io.Copy(io.Discard, r); err != nil || n != size {
				t.Fatalf("Get: %d bytes, %v", n, err)
			}
		})
		peaks[size] = [2]uint64{put, get}
		t.Logf("%3d MiB: peak client heap growth: put %.1f MiB, get %.1f MiB", size>>20, float64(put)/(1<<20), float64(get)/(1<<20))
	}
	const slack = 6 << 20
	for i, what := range []string{"put", "get"} {
		if small, large := peaks[8<<20][i], peaks[64<<20][i]; large > small+slack || large > 24<<20 {
			t.Errorf("%s: peak heap growth %d MiB for 64 MiB against %d MiB for 8 MiB: memory grows with the payload", what, large>>20, small>>20)
		}
	}
}
