package mcpfs

import (
	"bufio"
	"container/list"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/netutil"

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

// The defaults of HTTPOptions.
const (
	DefaultMaxSessions          = 1000
	DefaultIdleTimeout          = 30 * time.Minute
	DefaultMaxMCPSessions       = 8
	DefaultMaxMCPSessionsTotal  = 2000
	DefaultReadTimeout          = 30 * time.Second
	DefaultWriteTimeout         = 30 * time.Second
	DefaultConnIdleTimeout      = 2 * time.Minute
	DefaultMaxConns             = 1024
	defaultReadHeaderTimeoutMax = 10 * time.Second
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
	// MaxMCPSessions bounds the MCP sessions (Mcp-Session-Ids) one
	// identity holds (default DefaultMaxMCPSessions), and
	// MaxMCPSessionsTotal those of all identities together (default
	// DefaultMaxMCPSessionsTotal). An initialize beyond either closes the
	// least recently used MCP session without a request in progress (of
	// the identity, or of all) first; its client gets 404 and initializes
	// again. When every one has a request in progress the initialize is
	// refused with a JSON-RPC error saying which bound holds.
	MaxMCPSessions, MaxMCPSessionsTotal int
	// ReadTimeout bounds the reading of a request, header and body (default
	// DefaultReadTimeout); a streaming response is not bound by it: the
	// read deadline is lifted once the body has been read.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a response (default
	// DefaultWriteTimeout): a client that stops reading is cut off, a
	// long event stream that keeps being read is not.
	WriteTimeout time.Duration
	// ConnIdleTimeout closes a kept-alive connection without a request
	// for this long (default DefaultConnIdleTimeout).
	ConnIdleTimeout time.Duration
	// MaxConns bounds the connections Serve accepts at once (default
	// DefaultMaxConns); more wait in the listen queue until one closes.
	MaxConns int
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
	mcpIDs  map[string]*mcpSession // the MCP sessions, by Mcp-Session-Id
	mcpLRU  list.List              // of *mcpSession, most recently used first

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
	inflight int       // POST and DELETE requests in progress (a GET stream may stay open)
	mcp      list.List // of its *mcpSession, most recently used first
}

// mcpSession is one MCP session (Mcp-Session-Id) of a served identity.
type mcpSession struct {
	id       string
	owner    *served
	ss       *mcp.ServerSession
	elem     *list.Element // in HTTPHandler.mcpLRU
	ownElem  *list.Element // in owner.mcp
	inflight int           // POST and DELETE requests in progress
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
	for _, d := range []struct {
		v   *int
		def int
	}{{&opts.MaxMCPSessions, DefaultMaxMCPSessions}, {&opts.MaxMCPSessionsTotal, DefaultMaxMCPSessionsTotal}, {&opts.MaxConns, DefaultMaxConns}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&opts.ReadTimeout, DefaultReadTimeout}, {&opts.WriteTimeout, DefaultWriteTimeout}, {&opts.ConnIdleTimeout, DefaultConnIdleTimeout}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	h := &HTTPHandler{s: s, opts: opts, ids: map[artifacts.Scope]*served{}, closing: map[artifacts.Scope]chan struct{}{}, mcpIDs: map[string]*mcpSession{}}
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
			srv.AddReceivingMiddleware(h.registerMiddleware(id))
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
		for e := id.mcp.Front(); e != nil; e = id.mcp.Front() {
			h.forgetLocked(e.Value.(*mcpSession))
		}
		close(h.closing[id.scope])
		delete(h.closing, id.scope)
		h.mu.Unlock()
		h.s.notice("mcp session evicted", "app", id.scope.App, "user", id.scope.User, "session", id.scope.Session)
	}
}

// httpError writes a JSON error body with a stable code and closes the
// connection once it is written.
func httpError(w http.ResponseWriter, status int, code, msg string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentstore-mcp"`)
	}
	w.Header().Set("Content-Type", "application/json")
	// A refused client gets no kept-alive connection to hold.
	w.Header().Set("Connection", "close")
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

// ServeHTTP serves one request (see Server.HTTPHandler).
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w = &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: h.opts.WriteTimeout}
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
	call := r.Method != http.MethodGet
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		h.mu.Lock()
		ms := h.mcpIDs[sid]
		if ms != nil && ms.owner.scope != scope {
			h.mu.Unlock()
			h.s.notice("mcp http request refused: MCP session of another identity", "remote", r.RemoteAddr, "session", scope.Session)
			httpError(w, http.StatusForbidden, "PERMISSION_DENIED", "this MCP session was opened for another identity")
			return
		}
		if ms != nil && call {
			h.useLocked(ms)
			ms.inflight++
			defer func() {
				h.mu.Lock()
				ms.inflight--
				h.mu.Unlock()
			}()
		}
		h.mu.Unlock()
	}
	// The read deadline of ReadTimeout (Serve) bounds the request; once
	// the body is read, a streamed response must not be cut by it.
	rc := http.NewResponseController(w)
	if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet {
		_ = rc.SetReadDeadline(time.Time{})
	} else {
		r.Body = &bodyReader{ReadCloser: r.Body, rc: rc}
	}
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
	if call {
		// The go-sdk runs a call in its session's context, not the
		// request's: a client that goes away would leave its call
		// running to the call deadline. The request's context is found
		// again by a header only this handler sets (see handler).
		tok := rand.Text()
		r.Header.Set(headerCall, tok)
		callRequests.Store(tok, r.Context())
		defer callRequests.Delete(tok)
	} else {
		r.Header.Del(headerCall)
	}
	h.mcp.ServeHTTP(w, r)
}

// headerCall carries, from ServeHTTP to the tool handler, the key of the
// HTTP request that brought a call (any value a client sends is
// replaced).
const headerCall = "Agentstore-Internal-Call"

// callRequests maps headerCall values to the contexts of the requests
// in progress.
var callRequests sync.Map

// requestContext returns the context of the HTTP request that carried a
// call, if it came over HTTP and is still in progress.
func requestContext(req *mcp.CallToolRequest) (context.Context, bool) {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return nil, false
	}
	tok := req.Extra.Header.Get(headerCall)
	if tok == "" {
		return nil, false
	}
	v, ok := callRequests.Load(tok)
	if !ok {
		return nil, false
	}
	return v.(context.Context), true
}

// deadlineWriter sets the connection's write deadline before each write
// of the response, timeout from then: a client that stops reading is cut
// off after timeout, a long stream that is read is not (a deadline for
// the whole response, http.Server's WriteTimeout, would end it).
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (d *deadlineWriter) extend() { _ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout)) }

func (d *deadlineWriter) WriteHeader(code int) {
	d.extend()
	d.ResponseWriter.WriteHeader(code)
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.extend()
	return d.ResponseWriter.Write(p)
}

// Flush lets the streamable handler stream events.
func (d *deadlineWriter) Flush() {
	d.extend()
	_ = d.rc.Flush()
}

// Unwrap gives http.ResponseController the underlying writer.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// bodyReader lifts the connection's read deadline once the request body
// has been read to its end.
type bodyReader struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// registerMiddleware records each MCP session of id when its client
// initializes it, closing the least recently used idle MCP session first
// when a bound is reached (see HTTPOptions.MaxMCPSessions).
func (h *HTTPHandler) registerMiddleware(id *served) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" {
				if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.ID() != "" {
					if err := h.register(id, ss); err != nil {
						return nil, err
					}
				}
			}
			return next(ctx, method, req)
		}
	}
}

// register records the MCP session ss of id. The session is forgotten
// when it ends, however it ends (closed by its client, expired by the
// go-sdk, evicted).
func (h *HTTPHandler) register(id *served, ss *mcp.ServerSession) error {
	h.mu.Lock()
	if _, ok := h.mcpIDs[ss.ID()]; ok {
		h.mu.Unlock()
		return nil
	}
	var victims []*mcp.ServerSession
	if id.mcp.Len() >= h.opts.MaxMCPSessions {
		v := idleBack(&id.mcp)
		if v == nil {
			h.mu.Unlock()
			return fmt.Errorf("too many MCP sessions: this identity holds its limit of %d (--max-mcp-sessions) and each has a request in progress; close one (HTTP DELETE) or try again", h.opts.MaxMCPSessions)
		}
		victims = append(victims, v.ss)
		h.forgetLocked(v)
	}
	if len(h.mcpIDs) >= h.opts.MaxMCPSessionsTotal {
		v := idleBack(&h.mcpLRU)
		if v == nil {
			h.mu.Unlock()
			for _, v := range victims {
				go v.Close()
			}
			return fmt.Errorf("too many MCP sessions: the server holds its limit of %d (--max-mcp-sessions-total) and each has a request in progress; try again", h.opts.MaxMCPSessionsTotal)
		}
		victims = append(victims, v.ss)
		h.forgetLocked(v)
	}
	ms := &mcpSession{id: ss.ID(), owner: id, ss: ss}
	ms.elem = h.mcpLRU.PushFront(ms)
	ms.ownElem = id.mcp.PushFront(ms)
	h.mcpIDs[ms.id] = ms
	h.mu.Unlock()
	for _, v := range victims {
		h.s.notice("mcp session closed: too many MCP sessions", "app", id.scope.App, "user", id.scope.User, "session", id.scope.Session)
		go v.Close() // it may be streaming: its client sees the end
	}
	go func() {
		_ = ss.Wait()
		h.mu.Lock()
		if h.mcpIDs[ms.id] == ms {
			h.forgetLocked(ms)
		}
		h.mu.Unlock()
	}()
	return nil
}

// idleBack returns the least recently used MCP session of l without a
// request in progress, nil when there is none.
func idleBack(l *list.List) *mcpSession {
	for e := l.Back(); e != nil; e = e.Prev() {
		if ms := e.Value.(*mcpSession); ms.inflight == 0 {
			return ms
		}
	}
	return nil
}

// useLocked marks ms as the most recently used.
func (h *HTTPHandler) useLocked(ms *mcpSession) {
	if ms.elem != nil {
		h.mcpLRU.MoveToFront(ms.elem)
		ms.owner.mcp.MoveToFront(ms.ownElem)
	}
}

// forgetLocked drops ms from the bookkeeping (once).
func (h *HTTPHandler) forgetLocked(ms *mcpSession) {
	if ms.elem == nil {
		return
	}
	h.mcpLRU.Remove(ms.elem)
	ms.owner.mcp.Remove(ms.ownElem)
	ms.elem, ms.ownElem = nil, nil
	delete(h.mcpIDs, ms.id)
}

// MCPSessions returns the number of MCP sessions the handler holds.
func (h *HTTPHandler) MCPSessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.mcpIDs)
}

// Serve serves the handler at /mcp on ln until ctx is done, then shuts
// down gracefully (at most 10 s) and returns; it returns nil then, and
// the listener's error otherwise. At most MaxConns connections are served
// at once (netutil.LimitListener); each request is read within
// ReadTimeout (its header within 10 s, or ReadTimeout when shorter), each
// response write done within WriteTimeout, and a kept-alive connection
// closed after ConnIdleTimeout without a request. Identities idle for
// IdleTimeout are evicted now and then (ExpireIdle) without waiting for a
// request. Serve leaves the Server open: Close it afterwards.
func (h *HTTPHandler) Serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: min(defaultReadHeaderTimeoutMax, h.opts.ReadTimeout),
		ReadTimeout:       h.opts.ReadTimeout,
		IdleTimeout:       h.opts.ConnIdleTimeout,
	}
	if h.s.opts.Logger != nil {
		hs.ErrorLog = slog.NewLogLogger(h.s.opts.Logger.Handler(), slog.LevelWarn)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(netutil.LimitListener(ln, h.opts.MaxConns)) }()
	tick := time.NewTicker(max(h.opts.IdleTimeout/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			return err
		case <-tick.C:
			h.ExpireIdle(ctx)
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			err := hs.Shutdown(sctx)
			cancel()
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			return err
		}
	}
}
