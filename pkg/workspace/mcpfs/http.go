package mcpfs

import (
	"bufio"
	"container/list"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

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

// The defaults of HTTPOptions.MaxSessions and IdleTimeout.
const (
	DefaultMaxSessions = 1000
	DefaultIdleTimeout = 30 * time.Minute
)

// HTTPOptions configure Server.HTTPHandler.
type HTTPOptions struct {
	// Tokens are the accepted bearer tokens. Required: a request without
	// one of them is refused with 401.
	Tokens []Token
	// DefaultApp is the app of requests without an Agentstore-App header
	// ("" makes the header required).
	DefaultApp string
	// MaxSessions bounds the identities served at once, each with its MCP
	// server, MCP sessions and open workspace (default
	// DefaultMaxSessions). A new identity beyond it evicts the least
	// recently used one without a call in progress; when every one has a
	// call in progress the request gets 503 (code UNAVAILABLE).
	MaxSessions int
	// IdleTimeout evicts an identity that made no request for this long
	// (default DefaultIdleTimeout), at the next request or ExpireIdle; the
	// MCP sessions of the go-sdk expire after it too.
	IdleTimeout time.Duration
	// Now is the clock of the idle times (default the Server's).
	Now func() time.Time
}

// HTTPHandler serves streamable HTTP for many sessions (see
// Server.HTTPHandler). It is safe for concurrent use.
type HTTPHandler struct {
	s    *Server
	opts HTTPOptions
	mcp  *mcp.StreamableHTTPHandler

	mu      sync.Mutex
	ids     map[artifacts.Scope]*served // the identities served
	lru     list.List                   // of *served, most recently used first
	closing map[artifacts.Scope]chan struct{}
	bound   map[string]artifacts.Scope // Mcp-Session-Id -> identity

	// released, in tests, is signalled whenever a call ends.
	released *sync.Cond
}

// served is one served identity: its MCP server and what eviction must
// undo.
type served struct {
	scope    artifacts.Scope
	srv      *mcp.Server
	elem     *list.Element
	last     time.Time
	inflight int      // POST and DELETE requests in progress (a GET stream may stay open)
	ids      []string // the Mcp-Session-Ids opened for it
}

// HTTPHandler serves streamable HTTP for many sessions. Every request
// must carry "Authorization: Bearer TOKEN" with a token of opts.Tokens
// (401 otherwise) and the identity headers Agentstore-User and
// Agentstore-Session, and Agentstore-App unless DefaultApp is set (400
// otherwise). A bound token naming another identity is refused with 403,
// and so is a request whose Mcp-Session-Id was opened for another
// identity. Request bodies over Limits.MaxRequestBytes get 413.
//
// At most opts.MaxSessions identities are served at once; an evicted or
// idle-expired identity first ends its turn (under the end-of-turn policy:
// its snapshot is published), then its MCP sessions are closed (a client
// using one gets 404 and initializes again) and its workspace is closed.
// Its directory stays; the next request sets it up again.
func (s *Server) HTTPHandler(opts HTTPOptions) *HTTPHandler {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Now == nil {
		opts.Now = s.opts.Now
	}
	h := &HTTPHandler{s: s, opts: opts, ids: map[artifacts.Scope]*served{}, closing: map[artifacts.Scope]chan struct{}{}, bound: map[string]artifacts.Scope{}}
	h.mcp = mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: s.limits.MaxRequestBytes,
		SessionTimeout:      opts.IdleTimeout,
		Logger:              s.opts.Logger,
	})
	return h
}

type identityKey struct{}

// server returns the MCP server of the request's identity (set by
// ServeHTTP in the request's context).
func (h *HTTPHandler) server(r *http.Request) *mcp.Server {
	id, ok := r.Context().Value(identityKey{}).(*served)
	if !ok {
		return nil
	}
	return id.srv
}

// Len returns the number of identities served.
func (h *HTTPHandler) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// errBusy refuses a new identity when every served one has a call in
// progress.
var errBusy = errors.New("every served session has a call in progress")

// acquire returns the served identity of scope, making it (and evicting
// what must go) when needed; a call (a POST or DELETE, not the GET stream)
// counts as use and as in progress until release.
func (h *HTTPHandler) acquire(ctx context.Context, scope artifacts.Scope, call bool) (*served, error) {
	for {
		now := h.opts.Now()
		h.mu.Lock()
		if done, ok := h.closing[scope]; ok {
			// Being evicted: wait until its turn has ended, then serve
			// it anew.
			h.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		victims := h.expiredLocked(now)
		id := h.ids[scope]
		if id == nil {
			if len(h.ids) >= h.opts.MaxSessions {
				v := h.lruIdleLocked()
				if v == nil {
					h.mu.Unlock()
					h.evict(ctx, victims)
					return nil, errBusy
				}
				victims = append(victims, v)
				h.detachLocked(v)
			}
			srv, err := h.s.ForSession(scope)
			if err != nil {
				h.mu.Unlock()
				h.evict(ctx, victims)
				return nil, err
			}
			id = &served{scope: scope, srv: srv, last: now}
			id.elem = h.lru.PushFront(id)
			h.ids[scope] = id
		}
		// Only calls are use: a client keeps (and reopens) its GET stream
		// while idle.
		if call {
			id.last = now
			h.lru.MoveToFront(id.elem)
			id.inflight++
		}
		h.mu.Unlock()
		h.evict(ctx, victims)
		return id, nil
	}
}

func (h *HTTPHandler) release(id *served) {
	h.mu.Lock()
	id.inflight--
	id.last = h.opts.Now()
	if h.released != nil {
		h.released.Broadcast()
	}
	h.mu.Unlock()
}

// expiredLocked detaches the identities idle for IdleTimeout or longer.
func (h *HTTPHandler) expiredLocked(now time.Time) []*served {
	var out []*served
	for e := h.lru.Back(); e != nil; {
		id := e.Value.(*served)
		e = e.Prev()
		if id.inflight == 0 && now.Sub(id.last) >= h.opts.IdleTimeout {
			h.detachLocked(id)
			out = append(out, id)
		}
	}
	return out
}

// lruIdleLocked returns the least recently used identity without a call
// in progress, nil when there is none.
func (h *HTTPHandler) lruIdleLocked() *served {
	for e := h.lru.Back(); e != nil; e = e.Prev() {
		if id := e.Value.(*served); id.inflight == 0 {
			return id
		}
	}
	return nil
}

// detachLocked stops serving id: requests for its scope wait until evict
// has finished with it.
func (h *HTTPHandler) detachLocked(id *served) {
	h.lru.Remove(id.elem)
	delete(h.ids, id.scope)
	h.closing[id.scope] = make(chan struct{})
}

// ExpireIdle evicts every identity idle for IdleTimeout or longer and
// returns how many; run it now and then (agentstore mcp does), so that
// idle sessions end their turns without waiting for another request.
func (h *HTTPHandler) ExpireIdle(ctx context.Context) int {
	h.mu.Lock()
	victims := h.expiredLocked(h.opts.Now())
	h.mu.Unlock()
	h.evict(ctx, victims)
	return len(victims)
}

// evict ends the turn of each detached identity (its snapshot, under the
// end-of-turn policy) and only then closes its MCP sessions and its
// workspace. A failure to end the turn is logged: the workspace directory
// stays with every file, for the next request or the sweep.
func (h *HTTPHandler) evict(ctx context.Context, victims []*served) {
	ctx = context.WithoutCancel(ctx)
	for _, id := range victims {
		if err := h.s.endSession(ctx, id.scope, true); err != nil {
			h.s.warn("mcp session evicted without ending its turn; its files stay in the workspace", "app", id.scope.App, "user", id.scope.User, "session", id.scope.Session, "err", err)
		}
		for ss := range id.srv.Sessions() {
			ss.Close()
		}
		h.mu.Lock()
		for _, sid := range id.ids {
			delete(h.bound, sid)
		}
		close(h.closing[id.scope])
		delete(h.closing, id.scope)
		h.mu.Unlock()
		h.s.notice("mcp session evicted", "app", id.scope.App, "user", id.scope.User, "session", id.scope.Session)
	}
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

func (h *HTTPHandler) token(r *http.Request) (Token, bool) {
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

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	call := r.Method != http.MethodGet
	id, err := h.acquire(r.Context(), scope, call)
	switch {
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "UNAVAILABLE", fmt.Sprintf("the server serves its limit of %d sessions and every one has a call in progress; try again", h.opts.MaxSessions))
		return
	case err != nil:
		httpError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "the session cannot be served: "+err.Error())
		return
	}
	if call {
		defer h.release(id)
	}
	r = r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
	rec := &sessionRecorder{ResponseWriter: w, h: h, id: id}
	h.mcp.ServeHTTP(rec, r)
}

// sessionRecorder remembers which identity a new Mcp-Session-Id belongs
// to when the response sets one.
type sessionRecorder struct {
	http.ResponseWriter
	h    *HTTPHandler
	id   *served
	done bool
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
			s.h.bound[id] = s.id.scope
			s.id.ids = append(s.h.liveIDsLocked(s.id), id)
		}
		s.h.mu.Unlock()
	}
}

// liveIDsLocked forgets the Mcp-Session-Ids of id whose MCP sessions have
// ended (closed by the client, or expired) and returns the others.
func (h *HTTPHandler) liveIDsLocked(id *served) []string {
	live := map[string]bool{}
	for ss := range id.srv.Sessions() {
		live[ss.ID()] = true
	}
	kept := id.ids[:0]
	for _, sid := range id.ids {
		if live[sid] {
			kept = append(kept, sid)
		} else {
			delete(h.bound, sid)
		}
	}
	return kept
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
