package mcpfs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	runtimeToken = "runtime-token-0123456789"
	boundToken   = "bound-token-0123456789ab"
)

// headerTransport adds headers to every request.
type headerTransport struct {
	h http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

func identity(token, app, user, session string) http.Header {
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	for k, v := range map[string]string{HeaderApp: app, HeaderUser: user, HeaderSession: session} {
		if v != "" {
			h.Set(k, v)
		}
	}
	return h
}

func newHTTPEnv(t *testing.T) (*env, *httptest.Server) {
	e := newEnv(t, nil)
	tokens, err := ParseTokens(strings.NewReader("# runtime\n" + runtimeToken + "\n" + boundToken + " app=demo user=u-1 session=s-1\n"))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(e.srv.HTTPHandler(HTTPOptions{Tokens: tokens}))
	t.Cleanup(hs.Close)
	return e, hs
}

func httpClient(t *testing.T, url string, h http.Header) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: headerTransport{h}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestHTTPIdentity: the token authorises, the headers name the session,
// and no request can reach another session's files.
func TestHTTPIdentity(t *testing.T) {
	e, hs := newHTTPEnv(t)
	e.wsFile("mine.txt", "session one's file")
	tests := []struct {
		name    string
		headers http.Header
		wantErr bool
	}{
		{"runtime token", identity(runtimeToken, "demo", "u-1", "s-1"), false},
		{"runtime token, any session", identity(runtimeToken, "demo", "u-9", "s-9"), false},
		{"bound token, its session", identity(boundToken, "demo", "u-1", "s-1"), false},
		{"bound token, another session", identity(boundToken, "demo", "u-1", "s-2"), true},
		{"bound token, another user", identity(boundToken, "demo", "u-2", "s-1"), true},
		{"no token", identity("", "demo", "u-1", "s-1"), true},
		{"wrong token", identity("not-a-token-at-all-1234", "demo", "u-1", "s-1"), true},
		{"token, no identity", identity(runtimeToken, "", "", ""), true},
		{"token, no session", identity(runtimeToken, "demo", "u-1", ""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := httpClient(t, hs.URL, tt.headers)
			if tt.wantErr {
				if err == nil {
					t.Fatal("connected")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := callOn(t, cs, "read_text_file", map[string]any{"path": "mine.txt"})
			own := tt.headers.Get(HeaderSession) == "s-1" && tt.headers.Get(HeaderUser) == "u-1"
			if own != !res.IsError {
				t.Errorf("read of session one's file: error %v, text %q", res.IsError, text(res))
			}
		})
	}
}

// TestHTTPRefusals checks the status codes of refused raw requests and
// that a session id opened for one identity cannot be used with another.
func TestHTTPRefusals(t *testing.T) {
	e, hs := newHTTPEnv(t)
	_ = e
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(h http.Header, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", hs.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h.Clone()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	tests := []struct {
		name    string
		headers http.Header
		body    string
		status  int
	}{
		{"headers without token", identity("", "demo", "u-1", "s-1"), initBody, http.StatusUnauthorized},
		{"basic auth", http.Header{"Authorization": {"Basic " + runtimeToken}}, initBody, http.StatusUnauthorized},
		{"token with another session's headers", identity(boundToken, "demo", "u-1", "s-2"), initBody, http.StatusForbidden},
		{"bad identity", identity(runtimeToken, "demo", strings.Repeat("u", 300), "s"), initBody, http.StatusBadRequest},
		{"oversized body", identity(runtimeToken, "demo", "u-1", "s-1"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x","content":"` + strings.Repeat("x", 5<<20) + `"}}}`, http.StatusRequestEntityTooLarge},
		{"good", identity(runtimeToken, "demo", "u-1", "s-1"), initBody, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if resp := post(tt.headers, tt.body); resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
	t.Run("session of another identity", func(t *testing.T) {
		resp := post(identity(runtimeToken, "demo", "u-1", "s-1"), initBody)
		id := resp.Header.Get("Mcp-Session-Id")
		if id == "" {
			t.Fatal("no Mcp-Session-Id")
		}
		h := identity(runtimeToken, "demo", "u-1", "s-2")
		h.Set("Mcp-Session-Id", id)
		if resp := post(h, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusForbidden {
			t.Errorf("status %d, want 403", resp.StatusCode)
		}
	})
}

func TestParseTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []Token
		err  string
	}{
		{in: "# c\n\n" + runtimeToken + "\n", want: []Token{{Secret: runtimeToken}}},
		{in: boundToken + " app=a user=u session=s", want: []Token{{Secret: boundToken, App: "a", User: "u", Session: "s"}}},
		{in: "short", err: "shorter than 16"},
		{in: boundToken + " role=admin", err: "unknown field"},
		{in: boundToken + " app", err: "not app=A"},
		{in: "# nothing\n", err: "no token"},
	}
	for _, tt := range tests {
		got, err := ParseTokens(strings.NewReader(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) || got[0] != tt.want[0] {
			t.Errorf("%q: %v, %v", tt.in, got, err)
		}
	}
}
