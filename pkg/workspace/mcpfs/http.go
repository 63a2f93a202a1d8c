package mcpfs

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// The identity headers the runtime sets on every HTTP request.
const (
	HeaderApp     = "Agentstore-App"
	HeaderUser    = "Agentstore-User"
	HeaderSession = "Agentstore-Session"
)

// Token is one bearer token of the token file. A runtime token (App, User
// and Session empty) may assert any identity in the headers: the runtime
// is trusted to set them. A bound token may assert only the identity it
// names; a field left empty is not checked (a token bound to an app and a
// user may serve any of that user's sessions).
type Token struct {
	Secret             string
	App, User, Session string
}

// Runtime reports whether the token may assert any identity.
func (t Token) Runtime() bool { return t.App == "" && t.User == "" && t.Session == "" }

// ParseTokens reads a token file: one token a line, "#" comments and blank
// lines ignored. A line is the secret alone (a runtime token) or the
// secret followed by app=A, user=U and session=S fields (a bound token).
// Secrets must be at least 16 bytes.
func ParseTokens(r io.Reader) ([]Token, error) {
	const op = "mcp token file"
	var out []Token
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		t := Token{Secret: fields[0]}
		if len(t.Secret) < 16 {
			return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "line %d: the token is shorter than 16 bytes", n)
		}
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(f, "=")
			if !ok || v == "" {
				return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "line %d: %q is not app=A, user=U or session=S", n, f)
			}
			switch k {
			case "app":
				t.App = v
			case "user":
				t.User = v
			case "session":
				t.Session = v
			default:
				return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "line %d: unknown field %q (want app, user or session)", n, k)
			}
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, artifacts.Errorf(artifacts.CodeIO, op, err, "reading the token file")
	}
	if len(out) == 0 {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "no token in the token file")
	}
	return out, nil
}

// HTTPOptions configure Server.HTTPHandler.
type HTTPOptions struct {
	// Tokens are the accepted bearer tokens. Required: a request without
	// one of them is refused with 401.
	Tokens []Token
	// DefaultApp is the app of requests without an Agentstore-App header
	// ("" makes the header required).
	DefaultApp string
}

// HTTPHandler serves streamable HTTP for many sessions. Every request
// must carry "Authorization: Bearer TOKEN" with a token of opts.Tokens
// (401 otherwise) and the identity headers Agentstore-User and
// Agentstore-Session, and Agentstore-App unless DefaultApp is set (400
// otherwise). A bound token naming another identity is refused with 403,
// and so is a request whose Mcp-Session-Id was opened for another
// identity. Request bodies over Limits.MaxRequestBytes get 413.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	h := &httpHandler{s: s, opts: opts, servers: map[artifacts.Scope]*mcp.Server{}, bound: map[string]artifacts.Scope{}}
	h.mcp = mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: s.limits.MaxRequestBytes,
		Logger:              s.opts.Logger,
	})
	return h
}

type httpHandler struct {
	s    *Server
	opts HTTPOptions
	mcp  *mcp.StreamableHTTPHandler

	mu      sync.Mutex
	servers map[artifacts.Scope]*mcp.Server
	bound   map[string]artifacts.Scope // Mcp-Session-Id -> identity
}

type scopeKey struct{}

// server returns the MCP server of the request's identity (set by
// ServeHTTP in the request's context).
func (h *httpHandler) server(r *http.Request) *mcp.Server {
	scope, ok := r.Context().Value(scopeKey{}).(artifacts.Scope)
	if !ok {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if srv := h.servers[scope]; srv != nil {
		return srv
	}
	srv, err := h.s.ForSession(scope)
	if err != nil {
		return nil
	}
	h.servers[scope] = srv
	return srv
}

// httpError writes a JSON error body with a stable code.
func httpError(w http.ResponseWriter, status int, code, msg string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentstore-mcp"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}

func (h *httpHandler) token(r *http.Request) (Token, bool) {
	auth := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return Token{}, false
	}
	var found Token
	match := false
	for _, t := range h.opts.Tokens {
		if subtle.ConstantTimeCompare([]byte(t.Secret), []byte(strings.TrimSpace(secret))) == 1 {
			found, match = t, true
		}
	}
	return found, match
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, ok := h.token(r)
	if !ok {
		h.s.notice("mcp http request refused: no valid bearer token", "remote", r.RemoteAddr)
		httpError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "a valid bearer token is required (Authorization: Bearer TOKEN, from the server's --token-file)")
		return
	}
	app := r.Header.Get(HeaderApp)
	if app == "" {
		app = h.opts.DefaultApp
	}
	scope := artifacts.SessionScope(app, r.Header.Get(HeaderUser), r.Header.Get(HeaderSession))
	if app == "" || scope.User == "" || scope.Session == "" {
		httpError(w, http.StatusBadRequest, "INVALID_SCOPE", fmt.Sprintf("the runtime must set the identity headers %s, %s and %s", HeaderApp, HeaderUser, HeaderSession))
		return
	}
	if err := scope.Validate(); err != nil {
		httpError(w, http.StatusBadRequest, "INVALID_SCOPE", "the identity headers do not name a valid session: "+strings.TrimPrefix(err.Error(), "artifacts: validate scope: "))
		return
	}
	if !tok.Runtime() && ((tok.App != "" && tok.App != scope.App) || (tok.User != "" && tok.User != scope.User) || (tok.Session != "" && tok.Session != scope.Session)) {
		h.s.notice("mcp http request refused: token bound to another identity", "remote", r.RemoteAddr, "session", scope.Session)
		httpError(w, http.StatusForbidden, "PERMISSION_DENIED", "this token is bound to another identity than the one the headers name")
		return
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		h.mu.Lock()
		owner, known := h.bound[id]
		h.mu.Unlock()
		if known && owner != scope {
			h.s.notice("mcp http request refused: MCP session of another identity", "remote", r.RemoteAddr, "session", scope.Session)
			httpError(w, http.StatusForbidden, "PERMISSION_DENIED", "this MCP session was opened for another identity")
			return
		}
	}
	ctx := r.Context()
	r = r.WithContext(contextWith(ctx, scope))
	rec := &sessionRecorder{ResponseWriter: w, h: h, scope: scope}
	h.mcp.ServeHTTP(rec, r)
}

// sessionRecorder remembers which identity a new Mcp-Session-Id belongs
// to when the response sets one.
type sessionRecorder struct {
	http.ResponseWriter
	h     *httpHandler
	scope artifacts.Scope
	done  bool
}

func (s *sessionRecorder) WriteHeader(code int) {
	s.record()
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionRecorder) Write(p []byte) (int, error) {
	s.record()
	return s.ResponseWriter.Write(p)
}

func (s *sessionRecorder) record() {
	if s.done {
		return
	}
	s.done = true
	if id := s.Header().Get("Mcp-Session-Id"); id != "" {
		s.h.mu.Lock()
		if _, ok := s.h.bound[id]; !ok {
			s.h.bound[id] = s.scope
		}
		s.h.mu.Unlock()
	}
}

// Flush lets the streamable handler stream events.
func (s *sessionRecorder) Flush() {
	s.record()
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func contextWith(ctx context.Context, scope artifacts.Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}
