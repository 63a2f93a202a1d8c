package artifacts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseLocation(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want Location
		str  string
	}{
		{"/var/lib/x", Location{Scheme: SchemeFile, Root: "/var/lib/x"}, "file:///var/lib/x"},
		{"/var/lib/x/", Location{Scheme: SchemeFile, Root: "/var/lib/x"}, "file:///var/lib/x"},
		{"/var/lib/../lib/x", Location{Scheme: SchemeFile, Root: "/var/lib/x"}, "file:///var/lib/x"},
		{"rel/dir", Location{Scheme: SchemeFile, Root: filepath.Join(cwd, "rel/dir")}, ""},
		{".", Location{Scheme: SchemeFile, Root: cwd}, ""},
		{"./a://b", Location{Scheme: SchemeFile, Root: filepath.Join(cwd, "a:/b")}, ""},
		{"file:///var/lib/x", Location{Scheme: SchemeFile, Root: "/var/lib/x"}, "file:///var/lib/x"},
		{"file://localhost/var/lib/x", Location{Scheme: SchemeFile, Root: "/var/lib/x"}, "file:///var/lib/x"},
		{"file:///with%20space/x", Location{Scheme: SchemeFile, Root: "/with space/x"}, "file:///with%20space/x"},
		{"gs://my-bucket", Location{Scheme: SchemeGCS, Bucket: "my-bucket", Prefix: DefaultGCSPrefix, BucketOnly: true}, "gs://my-bucket"},
		{"gs://my-bucket/", Location{Scheme: SchemeGCS, Bucket: "my-bucket", Prefix: DefaultGCSPrefix, BucketOnly: true}, "gs://my-bucket"},
		{"gs://my-bucket?first_version=1", Location{Scheme: SchemeGCS, Bucket: "my-bucket", Prefix: DefaultGCSPrefix, BucketOnly: true, FirstVersion: 1, FirstVersionSet: true}, "gs://my-bucket?first_version=1"},
		{"gs://my-bucket/p/q?first_version=0", Location{Scheme: SchemeGCS, Bucket: "my-bucket", Prefix: "p/q", FirstVersionSet: true}, "gs://my-bucket/p/q?first_version=0"},
		{"file:///var/x?first_version=0", Location{Scheme: SchemeFile, Root: "/var/x", FirstVersionSet: true}, "file:///var/x?first_version=0"},
		{"gs://my_bucket.example.com/a/b/", Location{Scheme: SchemeGCS, Bucket: "my_bucket.example.com", Prefix: "a/b"}, "gs://my_bucket.example.com/a/b"},
		{"GS://abc/p", Location{Scheme: SchemeGCS, Bucket: "abc", Prefix: "p"}, ""},
		// RFC 8089's short form of a file URI.
		{"file:/var/lib/x", Location{Scheme: SchemeFile, Root: "/var/lib/x"}, "file:///var/lib/x"},
		// A local directory whose name begins "gs:" is spelled as a path.
		{"./gs:/wserl", Location{Scheme: SchemeFile, Root: filepath.Join(cwd, "gs:/wserl")}, ""},
	}
	for _, tt := range tests {
		got, err := ParseLocation(tt.in)
		if err != nil {
			t.Errorf("ParseLocation(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseLocation(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if tt.str != "" && got.String() != tt.str {
			t.Errorf("ParseLocation(%q).String() = %q, want %q", tt.in, got.String(), tt.str)
		}
	}
}

func TestParseLocationErrors(t *testing.T) {
	tests := []struct{ in, wantErr string }{
		{"", "empty"},
		{"/a\x00b", "NUL"},
		{"s3://bucket/x", `unsupported scheme "s3"`},
		{"http://example.com/x", "unsupported scheme"},
		{"file://host/var/x", "must not name a host"},
		{"file:relative", "a file URI is file:///PATH"},
		{"gs:/wserl", "did you mean gs://wserl?"},
		{"gs:erl", "did you mean gs://erl?"},
		{"GS:/b/p", "did you mean gs://b/p?"},
		{"file://", "absolute path"},
		{"file:///x?q=1", `unknown query parameter "q"`},
		{"file:///x#f", "no user or fragment"},
		{"gs://bucket?first_version=2", `first_version="2": want 0`},
		{"gs://bucket?first_version=", `first_version="": want 0`},
		{"gs://bucket?first_version=0&first_version=1", "given 2 times"},
		{"gs://bucket/p?x=1", `unknown query parameter "x"`},
		{"gs://bucket?%zz", "does not parse"},
		{"gs://", "no bucket"},
		{"gs:///prefix", "no bucket"},
		{"gs://ab", "3 to 63"},
		{"gs://" + strings.Repeat("a", 64), "3 to 63"},
		{"gs://My-Bucket", "character 'M'"},
		{"gs://-bucket", "start and end"},
		{"gs://bucket-", "start and end"},
		{"gs://a..b.c", "empty dot-separated part"},
		{"gs://googbucket", "goog"},
		{"gs://bucket/a//b", "empty path segment"},
		{"gs://bucket/a/../b", `".." path segment`},
		{"gs://bucket/./b", `"." path segment`},
	}
	for _, tt := range tests {
		_, err := ParseLocation(tt.in)
		if err == nil {
			t.Errorf("ParseLocation(%q): no error, want %q", tt.in, tt.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ParseLocation(%q) = %v, want it to contain %q", tt.in, err, tt.wantErr)
		}
		if CodeOf(err) != CodeInvalidArgument {
			t.Errorf("ParseLocation(%q) code %s, want invalid_argument", tt.in, CodeOf(err))
		}
	}
}

// TestLocationRoundTrip checks that String and Arg parse back to the same
// Location, the first_version query and a bucket-only URI included.
func TestLocationRoundTrip(t *testing.T) {
	for _, in := range []string{"gs://b-1", "gs://b-1?first_version=0", "gs://b-1/p?first_version=1", "file:///x/y?first_version=1", "/x/y"} {
		l, err := ParseLocation(in)
		if err != nil {
			t.Fatalf("ParseLocation(%q): %v", in, err)
		}
		for _, s := range []string{l.String(), l.Arg()} {
			back, err := ParseLocation(s)
			if err != nil || back != l {
				t.Errorf("ParseLocation(%q) = %+v, %v; want %+v (from %q)", s, back, err, l, in)
			}
		}
	}
	if got := (Location{Scheme: SchemeGCS, Bucket: "b", Prefix: DefaultGCSPrefix, BucketOnly: true}).ObjectRoot(); got != "" {
		t.Errorf("ObjectRoot of a bucket-only location = %q, want the root", got)
	}
	if got := (Location{Scheme: SchemeGCS, Bucket: "b", Prefix: "p/q"}).ObjectRoot(); got != "p/q/" {
		t.Errorf("ObjectRoot = %q, want p/q/", got)
	}
}
