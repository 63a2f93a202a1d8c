package mcpfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// Profile selects the tools a server registers.
type Profile string

// The profiles.
const (
	// ProfileReadWrite registers every tool but the runtime-only ones
	// (end_turn, list_checkpoints, restore_checkpoint).
	ProfileReadWrite Profile = "read-write"
	// ProfileReadOnly registers only the tools whose readOnlyHint is true.
	ProfileReadOnly Profile = "read-only"
)

// The route prefixes of the path namespace.
const (
	RouteWorkspace = "/workspace"
	RouteReference = "/reference"
	RouteMemory    = "/memory"
)

// Limits bound what one tool call may read, walk or accept. Zero fields
// take the defaults of DefaultLimits.
type Limits struct {
	// MaxReadBytes is the most bytes one read returns; larger files are
	// windowed (read_text_file) or refused (read_media_file, edit_file).
	MaxReadBytes int64
	// MaxEntries is the most entries directory_tree, search_files and grep
	// visit in one call; the result says when it stopped there.
	MaxEntries int
	// MaxDepth is the deepest directory level those tools descend to.
	MaxDepth int
	// MaxMatches is the default and the ceiling of grep's maxMatches.
	MaxMatches int
	// MaxRequestBytes is the largest request message (stdio line or HTTP
	// body) accepted; a larger one gets a clean error.
	MaxRequestBytes int64
	// CallTimeout is the longest one tool call may run; a call that
	// reaches it stops and answers a TIMEOUT error.
	CallTimeout time.Duration
}

// DefaultLimits returns the default limits: 1 MiB per read, 20,000
// entries 32 levels deep per walk, 100 grep matches, 4 MiB per request,
// 30 seconds per call.
func DefaultLimits() Limits {
	return Limits{MaxReadBytes: 1 << 20, MaxEntries: 20_000, MaxDepth: 32, MaxMatches: 100, MaxRequestBytes: 4 << 20, CallTimeout: 30 * time.Second}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxReadBytes <= 0 {
		l.MaxReadBytes = d.MaxReadBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxMatches <= 0 {
		l.MaxMatches = d.MaxMatches
	}
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = d.MaxRequestBytes
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = d.CallTimeout
	}
	return l
}

// Options configure a Server.
type Options struct {
	// Manager owns the scratch root and, through its options, the reference
	// tree, the store the snapshots go to, the quota and the snapshot
	// policy. Required.
	Manager *workspace.Manager
	// Memory is the store that holds /memory (the user scope of each
	// session); nil removes the route.
	Memory *artifacts.Store
	// Profile defaults to ProfileReadWrite.
	Profile Profile
	// Tools, when not empty, narrows the profile to these tool names;
	// the runtime-only tools ("end_turn", "list_checkpoints",
	// "restore_checkpoint") are registered only when named here.
	Tools []string
	// Limits bound reads, walks and requests.
	Limits Limits
	// Logger receives one structured record per tool call and the
	// server's notices (nil: none).
	Logger *slog.Logger
	// Audit, when set, receives one JSON line per tool call.
	Audit io.Writer
	// Name and Version are the server's implementation info.
	Name, Version string
	// Now is the clock of the audit records (default time.Now).
	Now func() time.Time
}

// Server holds what every session's MCP server shares: the workspace
// manager, the memory store, the tool set and the limits. It is safe for
// concurrent use.
type Server struct {
	opts   Options
	limits Limits
	tools  []*toolDef
	audit  *slog.Logger

	// stdioDrain, when positive, replaces DefaultStdioDrain; addTools,
	// when set, adds tools to each session's server (for the tests).
	stdioDrain time.Duration
	addTools   func(*mcp.Server)

	mu       sync.Mutex
	sessions map[artifacts.Scope]*session
}

// New checks opts and returns a Server. An unknown tool name in
// opts.Tools, or one the profile leaves out, is an error with
// CodeInvalidArgument.
func New(opts Options) (*Server, error) {
	const op = "mcp"
	if opts.Manager == nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "no workspace manager given")
	}
	if opts.Profile == "" {
		opts.Profile = ProfileReadWrite
	}
	if opts.Profile != ProfileReadWrite && opts.Profile != ProfileReadOnly {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "unknown profile %q (want read-only or read-write)", opts.Profile)
	}
	if opts.Name == "" {
		opts.Name = "agentstore-mcp"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, limits: opts.Limits.withDefaults(), sessions: map[artifacts.Scope]*session{}}
	tools, err := selectTools(allTools(), opts.Profile, opts.Tools, opts.Memory != nil)
	if err != nil {
		return nil, err
	}
	s.tools = tools
	if opts.Audit != nil {
		s.audit = slog.New(slog.NewJSONHandler(opts.Audit, nil))
	}
	return s, nil
}

// ToolNames returns the names of the tools every session's server lists,
// sorted.
func (s *Server) ToolNames() []string {
	out := make([]string, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t.tool.Name)
	}
	slices.Sort(out)
	return out
}

// selectTools applies the profile and the allowlist.
func selectTools(all []*toolDef, profile Profile, allow []string, memory bool) ([]*toolDef, error) {
	byName := map[string]*toolDef{}
	for _, t := range all {
		byName[t.tool.Name] = t
	}
	inProfile := func(t *toolDef) bool {
		return profile == ProfileReadWrite || t.tool.Annotations.ReadOnlyHint
	}
	if len(allow) == 0 {
		var out []*toolDef
		for _, t := range all {
			if !t.hidden && inProfile(t) {
				out = append(out, t)
			}
		}
		return out, nil
	}
	var out []*toolDef
	seen := map[string]bool{}
	for _, name := range allow {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		t, ok := byName[name]
		if !ok {
			names := make([]string, 0, len(all))
			for _, t := range all {
				names = append(names, t.tool.Name)
			}
			slices.Sort(names)
			return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "unknown tool %q (known: %s)", name, strings.Join(names, ", "))
		}
		// A runtime tool (hidden) may be named under any profile unless
		// it destroys workspace content: end_turn and list_checkpoints
		// may, restore_checkpoint may not under read-only.
		if !inProfile(t) && (!t.hidden || destructive(t)) {
			return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "tool %q writes, so the %s profile leaves it out", name, profile)
		}
		out = append(out, t)
	}
	return out, nil
}

// destructive reports whether a tool's annotations say it may destroy
// content.
func destructive(t *toolDef) bool {
	a := t.tool.Annotations
	return a != nil && a.DestructiveHint != nil && *a.DestructiveHint
}

// session is one session's state shared by all its MCP connections.
type session struct {
	scope artifacts.Scope

	mu     sync.Mutex
	opened bool // a call opened the workspace
}

func (s *Server) session(scope artifacts.Scope) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[scope]
	if ss == nil {
		ss = &session{scope: scope}
		s.sessions[scope] = ss
	}
	return ss
}

// ForSession returns an MCP server whose tools serve the session scope
// (KindSession). Nothing a tool argument says can change the session.
func (s *Server) ForSession(scope artifacts.Scope) (*mcp.Server, error) {
	if scope.Kind != artifacts.KindSession {
		return nil, artifacts.Errorf(artifacts.CodeInvalidScope, "mcp", nil, "the MCP server serves a session scope, not %s", scope)
	}
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	ss := s.session(scope)
	srv := mcp.NewServer(&mcp.Implementation{Name: s.opts.Name, Version: s.opts.Version}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
			p := req.Session.InitializeParams()
			if p == nil {
				return
			}
			//lint:ignore SA1019 roots are deprecated; we only log that a client offered them
			if p.Capabilities != nil && p.Capabilities.RootsV2 != nil {
				s.notice("client roots ignored: the operator's configuration is the only source of roots", "session", scope.Session)
			}
		},
		//lint:ignore SA1019 roots are deprecated; we only log that they are ignored
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) {
			s.notice("client roots change ignored", "session", scope.Session)
		},
	})
	for _, t := range s.tools {
		srv.AddTool(t.tool, handler(s.run(ss, t)))
	}
	if s.addTools != nil {
		s.addTools(srv)
	}
	if err := mcp.AddReceivingCustomMethod(srv, methodTooLarge, tooLargeHandler); err != nil {
		return nil, err
	}
	return srv, nil
}

func (s *Server) notice(msg string, args ...any) {
	if s.opts.Logger != nil {
		s.opts.Logger.Info(msg, args...)
	}
}

func (s *Server) warn(msg string, args ...any) {
	if s.opts.Logger != nil {
		s.opts.Logger.Warn(msg, args...)
	}
}

// callInfo is what the audit record of one call says besides the tool.
type callInfo struct {
	path  string
	bytes int64
}

// toolFunc runs one tool call: its arguments as sent, its result.
type toolFunc func(ctx context.Context, args json.RawMessage) *mcp.CallToolResult

// handler is the go-sdk's handler of a tool: run with the call's
// arguments. A call that came over HTTP also ends when the client that
// sent it goes away (its request's context ends).
func handler(run toolFunc) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if rctx, ok := requestContext(req); ok {
			var cancel context.CancelCauseFunc
			ctx, cancel = context.WithCancelCause(ctx)
			stop := context.AfterFunc(rctx, func() { cancel(context.Canceled) })
			defer stop()
			defer cancel(nil)
		}
		var raw json.RawMessage
		if req.Params != nil {
			raw = req.Params.Arguments
		}
		return run(ctx, raw), nil
	}
}

// run wraps a tool's function: it decodes nothing itself, times the call,
// turns an error into an error result and writes the audit record.
func (s *Server) run(ss *session, t *toolDef) toolFunc {
	return func(ctx context.Context, raw json.RawMessage) *mcp.CallToolResult {
		start := s.opts.Now()
		info := &callInfo{}
		c := &call{s: s, ss: ss, info: info}
		res, err := s.runBounded(ctx, c, t, raw)
		code := "OK"
		if err != nil {
			res = c.errorResult(err)
			code = errorCode(err)
		}
		s.auditCall(ss.scope, t.tool.Name, info, code, s.opts.Now().Sub(start))
		return res
	}
}

// runBounded runs a tool's function under the call's deadline
// (Limits.CallTimeout); a call that fails once it passed fails with
// CodeTimeout, saying so. A change that was made but whose snapshot the
// deadline cut short keeps its CodeNotPersisted: saying only TIMEOUT
// would report an applied change as failed.
func (s *Server) runBounded(ctx context.Context, c *call, t *toolDef, raw json.RawMessage) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.limits.CallTimeout, errCallTimeout)
	defer cancel()
	res, err := t.run(ctx, c, raw)
	if err != nil && context.Cause(ctx) == errCallTimeout {
		err = s.timeoutError(err)
	}
	return res, err
}

// timeoutError is the error of a call whose deadline passed before it
// finished with err.
func (s *Server) timeoutError(err error) error {
	if artifacts.CodeOf(err) == artifacts.CodeNotPersisted {
		return artifacts.Errorf(artifacts.CodeNotPersisted, "mcp", nil,
			"%s (the snapshot did not finish within the call's time limit of %s)", artifacts.ReasonOf(err), s.limits.CallTimeout)
	}
	return artifacts.Errorf(artifacts.CodeTimeout, "mcp", nil, "the call did not finish within its time limit of %s; a search or listing can be narrowed by its path, pattern or include", s.limits.CallTimeout)
}

// errCallTimeout is the cause of a call's context that ran past
// Limits.CallTimeout.
var errCallTimeout = errors.New("the call's time limit passed")

func (s *Server) auditCall(scope artifacts.Scope, tool string, info *callInfo, code string, d time.Duration) {
	args := []any{
		"tool", tool, "app", scope.App, "user", scope.User, "session", scope.Session,
		"path", info.path, "bytes", info.bytes, "code", code, "duration_ms", float64(d.Microseconds()) / 1000,
	}
	if s.opts.Logger != nil {
		s.opts.Logger.Info("mcp call", args...)
	}
	if s.audit != nil {
		s.audit.Info("mcp call", args...)
	}
}

// Close ends the turn of every session this server opened, which under
// the end-of-turn snapshot policy publishes a snapshot of each workspace
// that changed; it returns the first error. The manager stays open.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	scopes := make([]artifacts.Scope, 0, len(s.sessions))
	for sc := range s.sessions {
		scopes = append(scopes, sc)
	}
	s.mu.Unlock()
	var first error
	for _, sc := range scopes {
		if err := s.endSession(ctx, sc, false); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// endSession ends the turn of the session of scope when a call opened its
// workspace (under the end-of-turn policy, a snapshot of a changed
// workspace). With forget it then drops the session's state and closes its
// workspace, releasing its directory handle; the directory stays.
func (s *Server) endSession(ctx context.Context, scope artifacts.Scope, forget bool) error {
	s.mu.Lock()
	ss := s.sessions[scope]
	if forget {
		delete(s.sessions, scope)
	}
	s.mu.Unlock()
	if ss == nil || !ss.wasOpened() {
		return nil
	}
	w, err := s.opts.Manager.OpenExisting(ctx, scope)
	if artifacts.IsNotFound(err) {
		return nil
	}
	if err == nil {
		_, err = w.EndTurn(ctx)
		if forget {
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		return fmt.Errorf("ending the turn of %s: %w", scope, err)
	}
	return nil
}
