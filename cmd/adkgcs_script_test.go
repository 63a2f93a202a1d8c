package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/rogpeppe/go-internal/testscript"
	"google.golang.org/api/option"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// The testscript commands of the google-adk-gcs scripts
// (testdata/script/adkgcs_*.txtar), on the emulator gcs-emulator starts:
//
//	adk-gcs-load BUCKET go|js         upload every object of the adk-go or ADK JS fixture
//	                                  with its Content-Type and metadata, as the library wrote it
//	adk-gcs-put BUCKET OBJECT CONTENT  write CONTENT to OBJECT with no precondition, as ADK JS
//	                                  does (text/plain)
//	adk-gcs-check-fixture BUCKET go|js
//	                                  check with agentstore artifacts versions and get, exactly,
//	                                  every version of the fixture against the library's own
//	                                  listing (expected.tsv)
//	adk-gcs-damage BUCKET OBJECT      flip one byte of OBJECT's stored bytes behind the CRC32C
//	                                  the emulator keeps (as a disk fault would); needs
//	                                  GCS_EMULATOR_BACKEND=filesystem when gcs-emulator started
//
// With GCS_EMULATOR_BACKEND=filesystem set before gcs-emulator start, the
// emulator keeps its objects as files below $WORK/gcsfs instead of in
// memory (the default).
func init() {
	scriptCmds["adk-gcs-damage"] = cmdADKGCSDamage
	scriptCmds["adk-gcs-load"] = cmdADKGCSLoad
	scriptCmds["adk-gcs-put"] = cmdADKGCSPut
	scriptCmds["adk-gcs-check-fixture"] = cmdADKGCSCheckFixture
}

func adkFixture(ts *testscript.TestScript, which string) string {
	switch which {
	case "go":
		return testfixtures.ADKGCSGo
	case "js":
		return testfixtures.ADKGCSJS
	}
	ts.Fatalf("fixture %q: want go or js", which)
	return ""
}

// emulatorClient returns a storage client for the script's emulator.
func emulatorClient(ts *testscript.TestScript, ctx context.Context) *storage.Client {
	c, err := storage.NewClient(ctx,
		option.WithEndpoint("http://"+emulatorOf(ts).host+"/storage/v1/"),
		option.WithoutAuthentication(),
		storage.WithJSONReads(),
	)
	ts.Check(err)
	return c
}

func writeObject(ts *testscript.TestScript, c *storage.Client, ctx context.Context, bucket, name string, data []byte, contentType string, md map[string]string) {
	w := c.Bucket(bucket).Object(name).NewWriter(ctx)
	w.ContentType, w.Metadata = contentType, md
	_, err := w.Write(data)
	ts.Check(err)
	ts.Check(w.Close())
}

func cmdADKGCSLoad(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "adk-gcs-load")
	if len(args) != 2 {
		ts.Fatalf("usage: adk-gcs-load BUCKET go|js")
	}
	objs, err := testfixtures.ADKObjects(adkFixture(ts, args[1]))
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := emulatorClient(ts, ctx)
	defer c.Close()
	for _, o := range objs {
		writeObject(ts, c, ctx, args[0], o.Name, o.Data, o.ContentType, o.Metadata)
	}
}

func cmdADKGCSPut(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "adk-gcs-put")
	if len(args) != 3 {
		ts.Fatalf("usage: adk-gcs-put BUCKET OBJECT CONTENT")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := emulatorClient(ts, ctx)
	defer c.Close()
	writeObject(ts, c, ctx, args[0], args[1], []byte(args[2]), "text/plain", nil)
}

func cmdADKGCSCheckFixture(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "adk-gcs-check-fixture")
	if len(args) != 2 {
		ts.Fatalf("usage: adk-gcs-check-fixture BUCKET go|js")
	}
	exp, err := testfixtures.ADKExpected(adkFixture(ts, args[1]))
	ts.Check(err)
	store := "gs://" + args[0]
	type key struct {
		scope artifacts.Scope
		name  string
	}
	byName := map[key][][]string{}
	var keys []key
	for _, f := range exp {
		scope := artifacts.UserScope(f[1], f[2])
		if f[3] != "" {
			scope = artifacts.SessionScope(f[1], f[2], f[3])
		}
		k := key{scope, f[4]}
		if byName[k] == nil {
			keys = append(keys, k)
		}
		byName[k] = append(byName[k], f)
	}
	for _, k := range keys {
		es := byName[k]
		slices.SortFunc(es, func(a, b []string) int { return strings.Compare(pad(a[5]), pad(b[5])) })
		ts.Check(ts.Exec("agentstore", append([]string{"artifacts", "versions", "--store", store, "--name", k.name, "--all", "-o", "json"}, scopeFlags(k.scope)...)...))
		var got versionsJSON
		dec := json.NewDecoder(strings.NewReader(ts.ReadFile("stdout")))
		dec.DisallowUnknownFields()
		ts.Check(dec.Decode(&got))
		if got.Name != k.name || len(got.Items) != len(es) {
			ts.Fatalf("%s %q: %q with %d versions, want %d", k.scope, k.name, got.Name, len(got.Items), len(es))
		}
		for i, it := range got.Items {
			e := es[i]
			keys := []string{}
			if e[9] != "" {
				keys = strings.Split(e[9], ",")
			}
			if strconv.FormatInt(it.Version, 10) != e[5] || strconv.FormatInt(it.Size, 10) != e[6] || it.MIMEType != e[8] || !slices.Equal(it.MetadataKeys, keys) {
				ts.Fatalf("%s %q v%s: got %+v, want %q", k.scope, k.name, e[5], it, e)
			}
			ts.Check(ts.Exec("agentstore", append([]string{"artifacts", "get", "--store", store, "--name", k.name, "--version", e[5], "-O", "-"}, scopeFlags(k.scope)...)...))
			sum := sha256.Sum256([]byte(ts.ReadFile("stdout")))
			if hex.EncodeToString(sum[:]) != e[7] {
				ts.Fatalf("%s %q v%s: the bytes agentstore get wrote have another SHA-256 than the library read", k.scope, k.name, e[5])
			}
		}
	}
	ts.Logf("%d names, %d versions as the library listed them", len(keys), len(exp))
}

// pad makes decimal strings sort by value.
func pad(s string) string { return strings.Repeat("0", 20-len(s)) + s }

// emulatorBackend is the storage root of the script's emulator: "" for
// the memory backend, or with GCS_EMULATOR_BACKEND=filesystem the
// directory $WORK/gcsfs, where it keeps its objects as files.
func emulatorBackend(ts *testscript.TestScript) string {
	switch b := ts.Getenv("GCS_EMULATOR_BACKEND"); b {
	case "", "memory":
		return ""
	case "filesystem":
		return ts.MkAbs("gcsfs")
	default:
		ts.Fatalf("GCS_EMULATOR_BACKEND=%s: want memory or filesystem", b)
		return ""
	}
}

func cmdADKGCSDamage(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "adk-gcs-damage")
	if len(args) != 2 {
		ts.Fatalf("usage: adk-gcs-damage BUCKET OBJECT")
	}
	if ts.Getenv("GCS_EMULATOR_BACKEND") != "filesystem" {
		ts.Fatalf("adk-gcs-damage: start the emulator with GCS_EMULATOR_BACKEND=filesystem")
	}
	path := filepath.Join(ts.MkAbs("gcsfs"), args[0], filepath.FromSlash(args[1]))
	b, err := os.ReadFile(path)
	ts.Check(err)
	if len(b) == 0 {
		ts.Fatalf("adk-gcs-damage: %s has no bytes to damage", args[1])
	}
	b[len(b)/2] ^= 1
	ts.Check(os.WriteFile(path, b, 0o600))
}
