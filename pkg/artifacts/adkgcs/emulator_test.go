package adkgcs_test

import (
	"context"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
)

const testBucket = "adk-bucket"

// newEmulator starts an in-process fake-gcs-server (memory backend) with
// the test bucket.
func newEmulator(tb testing.TB) *fakestorage.Server {
	tb.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0})
	if err != nil {
		tb.Fatal(err)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
	tb.Cleanup(srv.Stop)
	return srv
}

// newClient returns a storage client for the emulator.
func newClient(tb testing.TB, srv *fakestorage.Server) *storage.Client {
	tb.Helper()
	c, err := storage.NewClient(context.Background(),
		option.WithEndpoint(srv.URL()+"/storage/v1/"),
		option.WithoutAuthentication(),
		storage.WithJSONReads(),
	)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// openStore opens the store at the bucket's root (root "") or below a
// prefix.
func openStore(tb testing.TB, c *storage.Client, root string, opts adkgcs.Options) *adkgcs.Store {
	tb.Helper()
	s, err := adkgcs.Open(context.Background(), c, testBucket, root, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// newStore starts an emulator and opens an empty store numbering from
// first.
func newStore(tb testing.TB, first int64) (*adkgcs.Store, *fakestorage.Server) {
	tb.Helper()
	srv := newEmulator(tb)
	return openStore(tb, newClient(tb, srv), "", adkgcs.Options{FirstVersion: first, FirstVersionSet: true}), srv
}

// loadFixture puts every object of an ADK fixture into the bucket below
// root, with its Content-Type and metadata, as the library wrote it.
func loadFixture(tb testing.TB, srv *fakestorage.Server, fixture, root string) []testfixtures.ADKObject {
	tb.Helper()
	objs, err := testfixtures.ADKObjects(fixture)
	if err != nil {
		tb.Fatal(err)
	}
	for _, o := range objs {
		putObject(srv, root+o.Name, o.Data, o.ContentType, o.Metadata)
	}
	return objs
}

// putObject writes an object directly, as another writer would.
func putObject(srv *fakestorage.Server, name string, data []byte, contentType string, md map[string]string) {
	srv.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testBucket, Name: name, ContentType: contentType, Metadata: md},
		Content:     data,
	})
}

// objectNames lists every object of the bucket.
func objectNames(tb testing.TB, srv *fakestorage.Server) []string {
	tb.Helper()
	var out []string
	eachObject(tb, srv, func(o fakestorage.ObjectAttrs) { out = append(out, o.Name) })
	return out
}

// eachObject calls fn for every object of the bucket, page by page.
func eachObject(tb testing.TB, srv *fakestorage.Server, fn func(fakestorage.ObjectAttrs)) {
	tb.Helper()
	opts := fakestorage.ListOptions{}
	for {
		page, err := srv.ListObjectsWithOptionsPaginated(testBucket, opts)
		if err != nil {
			tb.Fatal(err)
		}
		for _, o := range page.Objects {
			fn(o)
		}
		if page.NextPageToken == "" {
			return
		}
		opts.PageToken = page.NextPageToken
	}
}

// session and user are the scopes most tests use.
var (
	sessionScope = artifacts.SessionScope("app", "u-1", "s-1")
	userScope    = artifacts.UserScope("app", "u-1")
)

func joinKeys(md artifacts.Metadata) string {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	return strings.Join(sortStrings(keys), ",")
}

// adkgcsOptions numbers new names from first.
func adkgcsOptions(first int64) adkgcs.Options {
	return adkgcs.Options{FirstVersion: first, FirstVersionSet: true}
}
