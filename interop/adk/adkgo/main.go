// Command adkgo drives the Cloud Storage artifact service of the Go ADK
// (google.golang.org/adk/v2 v2.2.0, package artifact/gcsartifact) for
// agentstore's interop tests (package interop/adk of the main module). It is
// a module of its own so that the ADK and its dependencies stay out of
// agentstore's go.mod.
//
// Usage:
//
//	adkgo -bucket BUCKET
//
// STORAGE_EMULATOR_HOST must name the emulator (host:port): adkgo refuses to
// run without it, so that it never talks to real Cloud Storage. It reads one
// JSON operation a line on standard input and writes one JSON result a line
// on standard output, in order, until standard input ends:
//
//	{"op":"save","app","user","session","name","text"|"data"(base64)+"mime"}
//	                                        -> {"version"}
//	{"op":"load","app","user","session","name","version"?}
//	                                        -> {"data","mime"} or {"not_found":true}
//	{"op":"list","app","user","session"}    -> {"names"}     (session and user: names)
//	{"op":"versions","app","user","session","name"}
//	                                        -> {"versions"}  (ascending) or {"not_found":true}
//	{"op":"get","app","user","session","name","version"?}
//	                                        -> {"meta":{"version","mime","custom_metadata","canonical_uri","create_time"}}
//	{"op":"delete","app","user","session","name","version"?}
//	                                        -> {}            (no version: every version)
//	{"op":"race","app","user","session","name","writers","saves"}
//	                                        -> {"saves":[{"writer","index","version","sha256"}],"conflicts"}
//	{"op":"bench-list","app","user","session","count"}
//	                                        -> {"names","ns_per_op"}
//
// A version that is absent or null means the latest ("version 0" to the Go
// ADK). A failed operation answers {"error":"..."}, with "not_found" when the
// ADK reported that the artifact or version does not exist; adkgo goes on with the next line. "race" runs
// writers goroutines that each save saves distinct payloads (application/
// octet-stream, "adk-go writer W save I") to one name at once, retrying a
// save the ADK gave up on with ErrVersionConflict (the ADK's documented
// answer to too many concurrent writers): every save it reports was
// acknowledged by the ADK.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/artifact/gcsartifact"
)

// request is one operation.
type request struct {
	Op       string         `json:"op"`
	App      string         `json:"app"`
	User     string         `json:"user"`
	Session  string         `json:"session"`
	Name     string         `json:"name"`
	Version  *int64         `json:"version"`
	Text     *string        `json:"text"`
	Data     []byte         `json:"data"`
	MIME     string         `json:"mime"`
	Metadata map[string]any `json:"metadata"`
	FileURI  string         `json:"file_uri"`
	Writers  int            `json:"writers"`
	Saves    int            `json:"saves"`
	Count    int            `json:"count"`
}

// meta is what GetArtifactVersion returns.
type meta struct {
	Version        int64          `json:"version"`
	MIME           string         `json:"mime"`
	CustomMetadata map[string]any `json:"custom_metadata"`
	CanonicalURI   string         `json:"canonical_uri"`
	CreateTime     time.Time      `json:"create_time"`
}

// raceSave is one acknowledged save of a race.
type raceSave struct {
	Writer  int    `json:"writer"`
	Index   int    `json:"index"`
	Version int64  `json:"version"`
	SHA256  string `json:"sha256"`
}

// response is the result of one operation.
type response struct {
	Error     string     `json:"error,omitempty"`
	NotFound  bool       `json:"not_found,omitempty"`
	Version   *int64     `json:"version,omitempty"`
	Data      []byte     `json:"data,omitempty"`
	MIME      string     `json:"mime,omitempty"`
	Names     []string   `json:"names,omitempty"`
	Versions  []int64    `json:"versions,omitempty"`
	Meta      *meta      `json:"meta,omitempty"`
	Saves     []raceSave `json:"saves,omitempty"`
	Conflicts int        `json:"conflicts,omitempty"`
	NsPerOp   int64      `json:"ns_per_op,omitempty"`
}

func main() {
	bucket := flag.String("bucket", "", "the bucket of the artifact service")
	flag.Parse()
	if *bucket == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: adkgo -bucket BUCKET (operations on stdin, one JSON object a line)")
		os.Exit(2)
	}
	if os.Getenv("STORAGE_EMULATOR_HOST") == "" {
		fmt.Fprintln(os.Stderr, "adkgo: STORAGE_EMULATOR_HOST is not set; adkgo only talks to an emulator")
		os.Exit(2)
	}
	ctx := context.Background()
	svc, err := gcsartifact.NewService(ctx, *bucket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "adkgo: %v\n", err)
		os.Exit(1)
	}
	if err := serve(ctx, svc, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "adkgo: %v\n", err)
		os.Exit(1)
	}
}

// serve answers the operations of in, one a line, on out.
func serve(ctx context.Context, svc artifact.Service, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var req request
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var resp response
		if err := dec.Decode(&req); err != nil {
			resp.Error = "bad request: " + err.Error()
		} else {
			resp = do(ctx, svc, &req)
		}
		if err := enc.Encode(resp); err != nil {
			return err
		}
	}
	return sc.Err()
}

// do runs one operation.
func do(ctx context.Context, svc artifact.Service, req *request) response {
	var v int64 // 0: the latest, to the Go ADK
	if req.Version != nil {
		if *req.Version == 0 {
			return response{Error: "the Go ADK numbers versions from 1: version 0 means the latest to it"}
		}
		v = *req.Version
	}
	switch req.Op {
	case "save":
		part, err := partOf(req)
		if err != nil {
			return failed(err)
		}
		r, err := svc.Save(ctx, &artifact.SaveRequest{AppName: req.App, UserID: req.User, SessionID: req.Session, FileName: req.Name, Part: part})
		if err != nil {
			return failed(err)
		}
		return response{Version: &r.Version}
	case "load":
		r, err := svc.Load(ctx, &artifact.LoadRequest{AppName: req.App, UserID: req.User, SessionID: req.Session, FileName: req.Name, Version: v})
		if err != nil {
			return failed(err)
		}
		if r.Part.InlineData == nil {
			return response{Error: "the Go ADK loaded a part without inline data"}
		}
		return response{Data: r.Part.InlineData.Data, MIME: r.Part.InlineData.MIMEType}
	case "list":
		r, err := svc.List(ctx, &artifact.ListRequest{AppName: req.App, UserID: req.User, SessionID: req.Session})
		if err != nil {
			return failed(err)
		}
		return response{Names: r.FileNames}
	case "versions":
		r, err := svc.Versions(ctx, &artifact.VersionsRequest{AppName: req.App, UserID: req.User, SessionID: req.Session, FileName: req.Name})
		if err != nil {
			return failed(err)
		}
		vs := slices.Clone(r.Versions)
		slices.Sort(vs)
		return response{Versions: vs}
	case "get":
		r, err := svc.GetArtifactVersion(ctx, &artifact.GetArtifactVersionRequest{AppName: req.App, UserID: req.User, SessionID: req.Session, FileName: req.Name, Version: v})
		if err != nil {
			return failed(err)
		}
		a := r.ArtifactVersion
		return response{Meta: &meta{Version: a.Version, MIME: a.MimeType, CustomMetadata: a.CustomMetadata, CanonicalURI: a.CanonicalURI, CreateTime: a.CreateTime.UTC()}}
	case "delete":
		if err := svc.Delete(ctx, &artifact.DeleteRequest{AppName: req.App, UserID: req.User, SessionID: req.Session, FileName: req.Name, Version: v}); err != nil {
			return failed(err)
		}
		return response{}
	case "race":
		return race(ctx, svc, req)
	case "bench-list":
		if req.Count < 1 {
			return response{Error: "bench-list needs a count of at least 1"}
		}
		var names []string
		start := time.Now()
		for range req.Count {
			r, err := svc.List(ctx, &artifact.ListRequest{AppName: req.App, UserID: req.User, SessionID: req.Session})
			if err != nil {
				return failed(err)
			}
			names = r.FileNames
		}
		return response{Names: names, NsPerOp: time.Since(start).Nanoseconds() / int64(req.Count)}
	}
	return response{Error: fmt.Sprintf("unknown op %q", req.Op)}
}

// partOf is the part a save request carries. The Go ADK's Save takes text
// or inline data only: no custom metadata, no file reference.
func partOf(req *request) (*genai.Part, error) {
	switch {
	case req.Metadata != nil:
		return nil, errors.New("the Go ADK's Save takes no custom metadata")
	case req.FileURI != "":
		return nil, errors.New("the Go ADK's Save takes no file reference (Part.FileData)")
	case req.Text != nil && req.Data != nil:
		return nil, errors.New("a save takes text or data, not both")
	case req.Text != nil:
		return genai.NewPartFromText(*req.Text), nil
	case req.Data != nil:
		return genai.NewPartFromBytes(req.Data, req.MIME), nil
	}
	return nil, errors.New("a save needs text or data")
}

// race saves req.Writers x req.Saves distinct payloads to one name at once.
func race(ctx context.Context, svc artifact.Service, req *request) response {
	if req.Writers < 1 || req.Saves < 1 {
		return response{Error: "race needs writers and saves of at least 1"}
	}
	var (
		mu        sync.Mutex
		saves     []raceSave
		conflicts int
		errs      []error
		wg        sync.WaitGroup
	)
	for w := range req.Writers {
		wg.Go(func() {
			for i := range req.Saves {
				payload := fmt.Appendf(nil, "adk-go writer %d save %d\n", w, i)
				v, n, err := saveRetrying(ctx, svc, req, payload)
				sum := sha256.Sum256(payload)
				mu.Lock()
				conflicts += n
				if err != nil {
					errs = append(errs, fmt.Errorf("writer %d save %d: %w", w, i, err))
				} else {
					saves = append(saves, raceSave{Writer: w, Index: i, Version: v, SHA256: hex.EncodeToString(sum[:])})
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return failed(err)
	}
	slices.SortFunc(saves, func(a, b raceSave) int { return cmp.Compare(a.Version, b.Version) })
	return response{Saves: saves, Conflicts: conflicts}
}

// saveRetrying saves payload to req's name, again as long as the ADK gives
// up with ErrVersionConflict (at most 100 times), and returns the version
// and how many conflicts it met.
func saveRetrying(ctx context.Context, svc artifact.Service, req *request, payload []byte) (int64, int, error) {
	for conflicts := 0; ; conflicts++ {
		r, err := svc.Save(ctx, &artifact.SaveRequest{
			AppName: req.App, UserID: req.User, SessionID: req.Session, FileName: req.Name,
			Part: genai.NewPartFromBytes(payload, "application/octet-stream"),
		})
		if err == nil {
			return r.Version, conflicts, nil
		}
		if !errors.Is(err, gcsartifact.ErrVersionConflict) || conflicts == 100 {
			return 0, conflicts, err
		}
	}
}

// failed is the response of an operation that failed with err. The Go
// ADK says "not found" with fs.ErrNotExist, or passes on the storage
// client's ErrObjectNotExist (Load of a version that is gone).
func failed(err error) response {
	return response{Error: err.Error(), NotFound: errors.Is(err, fs.ErrNotExist) || errors.Is(err, storage.ErrObjectNotExist)}
}
