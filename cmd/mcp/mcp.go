// Package mcpcmd holds "agentstore mcp": an MCP file server over one
// session's workspace (stdio) or many sessions' (streamable HTTP). The
// work is done by package mcpfs; this command parses flags, opens the
// store and the workspace manager, and serves.
package mcpcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/duration"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/workspace/mcpfs"
)

// configFlags are the flags of "mcp" that are also config keys ("mcp.NAME"
// in the config file's "mcp:" section, AGENTSTORE_MCP_NAME).
var configFlags = []string{"http", "token-file", "reference", "profile", "tools", "snapshot", "snapshot-format", "memory",
	"ws-turn-bytes", "ws-max-bytes", "ws-max-files", "ws-max-entries", "ws-max-snapshots", "ws-max-store-bytes", "audit-log",
	"max-read-bytes", "max-request-bytes", "max-entries", "max-depth", "max-matches", "call-timeout",
	"max-sessions", "session-idle", "durable-writes",
	"max-mcp-sessions", "max-mcp-sessions-total", "http-read-timeout", "http-write-timeout", "http-idle-timeout", "http-max-conns"}

func init() {
	keys := make([]string, len(configFlags))
	for i, f := range configFlags {
		keys[i] = "mcp." + f
	}
	cmdutil.RegisterConfigKeys(keys...)
}

// Options are the flags and dependencies of "mcp".
type Options struct {
	IO     *iostreams.IOStreams
	Config func() (*cmdutil.Config, error)
	// OpenStore opens --store for writing (snapshots and memory writes go
	// there): a missing or empty location becomes a new store.
	OpenStore func(context.Context) (*artifacts.Store, error)
	Now       func() time.Time
	// Stdin and Stdout carry the stdio transport (default: the process's).
	Stdin  io.Reader
	Stdout io.Writer
	// Version is the server's reported version.
	Version string

	Scope     cmdutil.ScopeFlags
	HTTP      string
	TokenFile string
	// MaxSessions and SessionIdle bound the sessions --http serves at once
	// (mcpfs.HTTPOptions).
	MaxSessions int
	SessionIdle time.Duration
	// HTTPLimits bound the MCP sessions and connections of --http.
	HTTPLimits httpLimitFlags
	// DurableWrites fsyncs every workspace write (workspace.Options.Durable).
	DurableWrites bool
	Reference     string
	Profile       string
	Tools         []string
	Snapshot      string
	// SnapshotFormat is --snapshot-format: incremental, zip or auto.
	SnapshotFormat string
	Memory         string
	TurnBytes      string
	MaxBytes       string
	MaxFiles       int
	MaxEntries     int
	// MaxSnapshots is --ws-max-snapshots: the checkpoints a session keeps.
	MaxSnapshots int
	// MaxStoreBytes is --ws-max-store-bytes: the bytes a session's
	// snapshots may hold in the store.
	MaxStoreBytes string
	AuditLog      string
	Limits        limitFlags
}

type httpLimitFlags struct {
	MaxMCPSessions, MaxMCPSessionsTotal, MaxConns int
	ReadTimeout, WriteTimeout, IdleTimeout        time.Duration
}

type limitFlags struct {
	MaxReadBytes    string
	MaxRequestBytes string
	MaxEntries      int
	MaxDepth        int
	MaxMatches      int
	CallTimeout     time.Duration
}

// The values of --snapshot.
const (
	SnapshotOnWrite   = "on-write"
	SnapshotEndOfTurn = "end-of-turn"
	SnapshotOff       = "off"
)

// NewCmdMCP returns "mcp". runF, when not nil, replaces the run function.
func NewCmdMCP(f *cmdutil.Factory, version string, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IO, Config: f.Config, OpenStore: f.CreateStore, Now: f.Now, Version: version}
	cmd := &cobra.Command{
		Use:   "mcp (--app A --user U --session S | --http ADDR --token-file FILE) [flags]",
		Short: "Serve a session's workspace to an agent over MCP (stdio or HTTP)",
		Long: `Serve files to an agent through the Model Context Protocol: the tools of the
reference filesystem server (read_text_file, write_file, edit_file,
directory_tree, search_files, ...) plus grep, append_file, delete_file and
copy_file, over one path namespace:

  /workspace/...  the session's scratch workspace under --scratch (read-write)
  /reference/...  the --reference tree (read-only)
  /memory/...     the user's long-term memory: artifacts in the user scope of
                  --store, shared by all their sessions (--memory off: none)

Relative paths are relative to /workspace. Client roots are ignored.

The session comes from the runtime, never from the model. Over stdio (the
default; one process per session, as runtimes spawn tool servers) it is
--app/--user/--session. With --http ADDR (loopback unless ADDR names a
host) one server serves many sessions: every request needs
"Authorization: Bearer TOKEN" with a token of --token-file and the headers
Agentstore-App (default --app), Agentstore-User and Agentstore-Session. A
token line may bind the token to an identity ("TOKEN app=A user=U
session=S"); a bare token is a runtime token that may name any session.
At most --max-sessions sessions are served at once: a new one evicts the
least recently used one without a call in progress (503 when every one has
a call in progress), and a session idle for --session-idle is evicted. An
evicted session first ends its turn (snapshotted under end-of-turn), then
its MCP sessions are closed; its client initializes again, and its files
stay in the workspace. A session's clients hold at most --max-mcp-sessions
MCP sessions, all together --max-mcp-sessions-total: a new one closes the
least recently used idle one. Connections are bounded too: at most
--http-max-conns at once, a request read within --http-read-timeout, each
write of a response done within --http-write-timeout, a kept-alive
connection closed after --http-idle-timeout; a refused request (401, 403,
400, 503) closes its connection.

Over stdio, when the input ends the calls already received are answered
(each waited for at most 30 s), then the server exits.

Every write is charged to the session's quota before a byte is written:
--ws-turn-bytes per turn, --ws-max-bytes, --ws-max-files and
--ws-max-entries in total, counted at any depth; a directory counts as an
entry and is charged 4096 bytes. Over a limit the tool result is an error
with code QUOTA_EXCEEDED, the limit that bound (limit: turn_bytes, bytes,
files or entries) and what is left under each limit set (remaining_bytes,
remaining_files, remaining_entries), and nothing was written. A missing workspace is hydrated
from its latest snapshot on first touch; --snapshot on-write (default)
answers a write only once a snapshot holding it is stored (writes that
arrive while one is stored share the next; a write whose snapshot failed
answers NOT_PERSISTED: the change stays and the next write or end_turn
stores it), end-of-turn snapshots when the runtime calls the end_turn
tool (list it with --tools) and on shutdown, off never. --snapshot-format
picks what a snapshot stores: zip (a whole workspace.zip each time),
incremental (a checkpoint of what changed: workspace.manifest and
workspace.pack) or auto (default: zip below 8 MiB, incremental from
there); hydration takes the newest snapshot of either format; a session
keeps its last --ws-max-snapshots checkpoints, and its snapshots (with
the session's other artifacts) hold at most --ws-max-store-bytes in the
store: a snapshot that would pass it first deletes the oldest
checkpoints (never the latest), else the write answers NOT_PERSISTED
with cause QUOTA_EXCEEDED and remaining_store_bytes (the ceiling bounds
incremental snapshots, which auto then always writes). The runtime tools
list_checkpoints and restore_checkpoint (only when named in --tools) list
them and restore one (refused with WOULD_OVERWRITE over unsaved work
unless force). A snapshot
on a checkpoint another writer has superseded answers CONFLICT, keeps the
local tree and the server keeps serving. A write to /workspace is atomic
(a temporary file renamed into place) but not fsynced: the scratch
directory is a cache of the snapshots, and a machine crash may lose the
writes since the last snapshot. --durable-writes fsyncs each one before
answering.

Each call is logged on stderr (tool, path, bytes, result code, duration);
--audit-log FILE appends the same records as JSON lines.

Every flag but --app/--user/--session is also a config key, in the config
file's "mcp:" section ("profile: read-only") and as AGENTSTORE_MCP_NAME
(AGENTSTORE_MCP_WS_TURN_BYTES); the command line wins.`,
		Example: `  # stdio, one process per session (what an ADK McpToolset spawns)
  agentstore mcp --store /var/lib/agentstore/store --scratch /var/lib/agentstore/scratch \
    --reference /srv/reference --app demo --user u-42 --session s-7

  # read-only tools only
  agentstore mcp --profile read-only --app demo --user u-42 --session s-7

  # HTTP for many sessions on loopback port 8765
  agentstore mcp --http :8765 --token-file /etc/agentstore/mcp-tokens --app demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := opts.Config()
			if err != nil {
				return err
			}
			if err := cmdutil.ApplyConfigKeys(cmd, cfg, "mcp"); err != nil {
				return err
			}
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	cmdutil.NoteSizes(cmd)
	cmdutil.SetExitStatusNote(cmd, "1 also when the server cannot start (store, scratch root, token file, address)")
	d := mcpfs.DefaultLimits()
	fl := cmd.Flags()
	fl.StringVar(&opts.HTTP, "http", "", "serve streamable HTTP on `ADDR` (host:port; :port means 127.0.0.1:port) instead of stdio")
	fl.StringVar(&opts.TokenFile, "token-file", "", "bearer tokens for --http, one a line (`FILE`; see above)")
	fl.IntVar(&opts.MaxSessions, "max-sessions", mcpfs.DefaultMaxSessions, "sessions --http serves at once; more evict the least recently used")
	fl.Var(duration.NewValue(&opts.SessionIdle, mcpfs.DefaultIdleTimeout), "session-idle", "evict a session --http serves after this long without a request")
	fl.IntVar(&opts.HTTPLimits.MaxMCPSessions, "max-mcp-sessions", mcpfs.DefaultMaxMCPSessions, "MCP sessions one session's clients may hold over --http; more close the least recently used idle one")
	fl.IntVar(&opts.HTTPLimits.MaxMCPSessionsTotal, "max-mcp-sessions-total", mcpfs.DefaultMaxMCPSessionsTotal, "MCP sessions all clients of --http may hold together")
	fl.IntVar(&opts.HTTPLimits.MaxConns, "http-max-conns", mcpfs.DefaultMaxConns, "connections --http serves at once; more wait until one closes")
	fl.Var(duration.NewValue(&opts.HTTPLimits.ReadTimeout, mcpfs.DefaultReadTimeout), "http-read-timeout", "time to read one request, header and body, over --http")
	fl.Var(duration.NewValue(&opts.HTTPLimits.WriteTimeout, mcpfs.DefaultWriteTimeout), "http-write-timeout", "time for each write of a response over --http (a stream that is read lives on)")
	fl.Var(duration.NewValue(&opts.HTTPLimits.IdleTimeout, mcpfs.DefaultConnIdleTimeout), "http-idle-timeout", "close a kept-alive --http connection after this long without a request")
	fl.StringVar(&opts.Reference, "reference", "", "read-only reference tree served as /reference (`DIR`)")
	fl.StringVar(&opts.Profile, "profile", string(mcpfs.ProfileReadWrite), "tool profile: read-only or read-write")
	fl.StringSliceVar(&opts.Tools, "tools", nil, "serve only these tools (comma-separated; the runtime tools end_turn, list_checkpoints and restore_checkpoint only when named)")
	fl.StringVar(&opts.Snapshot, "snapshot", SnapshotOnWrite, "when to snapshot the workspace: on-write, end-of-turn or off")
	fl.StringVar(&opts.SnapshotFormat, "snapshot-format", string(workspace.FormatAuto), "snapshot format: incremental (what changed), zip (a whole workspace.zip) or auto (zip below 8 MiB)")
	fl.StringVar(&opts.Memory, "memory", "on", "serve /memory from the user scope of --store: on or off")
	fl.StringVar(&opts.TurnBytes, "ws-turn-bytes", "", "bytes a session may write per turn, e.g. 10000000 or 64MiB (default no limit)")
	fl.StringVar(&opts.MaxBytes, "ws-max-bytes", "", "bytes a workspace may hold, e.g. 512MiB (default no limit)")
	fl.IntVar(&opts.MaxFiles, "ws-max-files", 0, "files a workspace may hold, at any depth (default no limit)")
	fl.IntVar(&opts.MaxEntries, "ws-max-entries", 0, "files and directories a workspace may hold together (default no limit)")
	fl.IntVar(&opts.MaxSnapshots, "ws-max-snapshots", checkpoint.DefaultMaxSnapshots, "checkpoints (incremental snapshots) a session keeps; older ones are deleted")
	fl.StringVar(&opts.MaxStoreBytes, "ws-max-store-bytes", "", "bytes a session's snapshots may hold in the store, e.g. 1GiB (default no limit; not with --snapshot-format zip)")
	fl.BoolVar(&opts.DurableWrites, "durable-writes", false, "fsync every workspace write before answering (default: atomic rename only; the snapshot is the durable copy)")
	fl.StringVar(&opts.AuditLog, "audit-log", "", "append one JSON line per tool call to `FILE`")
	fl.StringVar(&opts.Limits.MaxReadBytes, "max-read-bytes", "", fmt.Sprintf("bytes one read returns; larger files are windowed (default %d)", d.MaxReadBytes))
	fl.StringVar(&opts.Limits.MaxRequestBytes, "max-request-bytes", "", fmt.Sprintf("largest request message accepted (default %d)", d.MaxRequestBytes))
	fl.IntVar(&opts.Limits.MaxEntries, "max-entries", 0, fmt.Sprintf("entries directory_tree, search_files and grep visit per call (default %d)", d.MaxEntries))
	fl.IntVar(&opts.Limits.MaxDepth, "max-depth", 0, fmt.Sprintf("directory levels they descend (default %d)", d.MaxDepth))
	fl.IntVar(&opts.Limits.MaxMatches, "max-matches", 0, fmt.Sprintf("grep matches per call, default and ceiling (default %d)", d.MaxMatches))
	fl.Var(duration.NewValue(&opts.Limits.CallTimeout, d.CallTimeout), "call-timeout", "longest one tool call may run; past it the call stops and answers TIMEOUT")
	_ = cmd.RegisterFlagCompletionFunc("profile", fixed(string(mcpfs.ProfileReadOnly), string(mcpfs.ProfileReadWrite)))
	_ = cmd.RegisterFlagCompletionFunc("snapshot", fixed(SnapshotOnWrite, SnapshotEndOfTurn, SnapshotOff))
	_ = cmd.RegisterFlagCompletionFunc("snapshot-format", fixed(string(workspace.FormatIncremental), string(workspace.FormatZip), string(workspace.FormatAuto)))
	_ = cmd.RegisterFlagCompletionFunc("memory", fixed("on", "off"))
	_ = cmd.MarkFlagDirname("reference")
	return cmd
}

func fixed(vals ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return vals, cobra.ShellCompDirectiveNoFileComp
	}
}

// check validates the flags without I/O.
func (o *Options) check() error {
	switch o.Profile {
	case string(mcpfs.ProfileReadOnly), string(mcpfs.ProfileReadWrite):
	default:
		return cmdutil.Usagef("--profile %q: want read-only or read-write", o.Profile)
	}
	switch o.Snapshot {
	case SnapshotOnWrite, SnapshotEndOfTurn, SnapshotOff:
	default:
		return cmdutil.Usagef("--snapshot %q: want on-write, end-of-turn or off", o.Snapshot)
	}
	if _, err := workspace.ParseSnapshotFormat(o.SnapshotFormat); err != nil || o.SnapshotFormat == "" {
		return cmdutil.Usagef("--snapshot-format %q: want incremental, zip or auto", o.SnapshotFormat)
	}
	switch o.Memory {
	case "on", "off":
	default:
		return cmdutil.Usagef("--memory %q: want on or off", o.Memory)
	}
	for _, s := range []struct{ flag, v string }{
		{"--ws-turn-bytes", o.TurnBytes}, {"--ws-max-bytes", o.MaxBytes}, {"--ws-max-store-bytes", o.MaxStoreBytes},
		{"--max-read-bytes", o.Limits.MaxReadBytes}, {"--max-request-bytes", o.Limits.MaxRequestBytes},
	} {
		if _, err := cmdutil.ParseSize(s.v); err != nil {
			return cmdutil.Usagef("%s: %v", s.flag, err)
		}
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"--ws-max-files", o.MaxFiles}, {"--ws-max-entries", o.MaxEntries}, {"--max-entries", o.Limits.MaxEntries}, {"--max-depth", o.Limits.MaxDepth}, {"--max-matches", o.Limits.MaxMatches}} {
		if n.v < 0 {
			return cmdutil.Usagef("%s %d is negative", n.flag, n.v)
		}
	}
	if n, _ := cmdutil.ParseSize(o.MaxStoreBytes); n > 0 && o.SnapshotFormat == string(workspace.FormatZip) {
		return cmdutil.Usagef("--ws-max-store-bytes bounds incremental snapshots, and a zip's size is not known before it is stored: use --snapshot-format incremental or auto with it")
	}
	if o.MaxSnapshots < 1 {
		return cmdutil.Usagef("--ws-max-snapshots %d: want at least 1", o.MaxSnapshots)
	}
	if o.MaxSessions < 1 {
		return cmdutil.Usagef("--max-sessions %d: want at least 1", o.MaxSessions)
	}
	if o.Limits.CallTimeout <= 0 {
		return cmdutil.Usagef("--call-timeout %s: want a positive duration such as 30s", o.Limits.CallTimeout)
	}
	if o.SessionIdle <= 0 {
		return cmdutil.Usagef("--session-idle %s: want a positive duration such as 30m", o.SessionIdle)
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"--max-mcp-sessions", o.HTTPLimits.MaxMCPSessions}, {"--max-mcp-sessions-total", o.HTTPLimits.MaxMCPSessionsTotal}, {"--http-max-conns", o.HTTPLimits.MaxConns}} {
		if n.v < 1 {
			return cmdutil.Usagef("%s %d: want at least 1", n.flag, n.v)
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--http-read-timeout", o.HTTPLimits.ReadTimeout}, {"--http-write-timeout", o.HTTPLimits.WriteTimeout}, {"--http-idle-timeout", o.HTTPLimits.IdleTimeout}} {
		if d.v <= 0 {
			return cmdutil.Usagef("%s %s: want a positive duration such as 30s", d.flag, d.v)
		}
	}
	if o.HTTP == "" {
		if o.TokenFile != "" {
			return cmdutil.Usagef("--token-file is for --http; over stdio the session is --app/--user/--session")
		}
		if _, err := o.Scope.Scope(true, artifacts.KindSession); err != nil {
			return cmdutil.Usagef("over stdio the runtime names the session: %v", err)
		}
		return nil
	}
	if o.TokenFile == "" {
		return cmdutil.Usagef("--http needs --token-file: requests without a valid bearer token are refused")
	}
	if o.Scope.User != "" || o.Scope.Session != "" {
		return cmdutil.Usagef("with --http the session comes from the request headers; give only --app (the default Agentstore-App)")
	}
	if _, _, err := net.SplitHostPort(o.HTTP); err != nil {
		return cmdutil.Usagef("--http %q: want host:port or :port", o.HTTP)
	}
	return nil
}

// listenAddr returns ADDR with the loopback host when it names none.
func listenAddr(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func run(ctx context.Context, opts *Options) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	if cfg.ScratchDefault {
		if err := os.MkdirAll(cfg.Scratch, 0o700); err != nil {
			return artifacts.Errorf(artifacts.CodeIO, "mcp", err, "cannot create the default scratch root %s: give --scratch DIR", cfg.Scratch)
		}
	}
	// A server writes to its store, so an empty directory becomes a new
	// store; a path that does not exist is a typo until shown otherwise.
	if u, err := cmdutil.ParseStoreURI(cfg.Store); err == nil && u.Scheme == cmdutil.SchemeFile {
		if _, err := os.Stat(u.Root); errors.Is(err, fs.ErrNotExist) {
			return cmdutil.CodedError(string(artifacts.CodeNotFound), fmt.Errorf("no store at %s: create that directory first (an empty directory becomes a new store, of --layout or erlang-fs) or give the right --store", u.Root))
		}
	}
	st, err := opts.OpenStore(ctx)
	if err != nil {
		return err
	}
	turn, _ := cmdutil.ParseSize(opts.TurnBytes)
	total, _ := cmdutil.ParseSize(opts.MaxBytes)
	storeBytes, _ := cmdutil.ParseSize(opts.MaxStoreBytes)
	policy := map[string]workspace.SnapshotPolicy{
		SnapshotOnWrite: workspace.SnapshotOnWrite, SnapshotEndOfTurn: workspace.SnapshotAtEndOfTurn, SnapshotOff: workspace.SnapshotManual,
	}[opts.Snapshot]
	m, err := workspace.New(workspace.Options{
		Scratch: cfg.Scratch, Reference: opts.Reference, Store: st,
		Quota:  workspace.Quota{TurnBytes: turn, TotalBytes: total, MaxFiles: opts.MaxFiles, MaxEntries: opts.MaxEntries},
		Policy: policy, Now: opts.Now,
		Durable: opts.DurableWrites, SnapshotFormat: workspace.SnapshotFormat(opts.SnapshotFormat),
		MaxCheckpoints: opts.MaxSnapshots, MaxStoreBytes: storeBytes,
	})
	if err != nil {
		return err
	}
	defer m.Close()

	logger := callLogger(opts.IO.ErrOut, cfg)
	var audit io.Writer
	if opts.AuditLog != "" {
		af, err := os.OpenFile(opts.AuditLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return artifacts.Errorf(artifacts.CodeIO, "mcp", err, "cannot open the audit log %s", opts.AuditLog)
		}
		defer af.Close()
		audit = af
	}
	var lim mcpfs.Limits
	lim.MaxReadBytes, _ = cmdutil.ParseSize(opts.Limits.MaxReadBytes)
	lim.MaxRequestBytes, _ = cmdutil.ParseSize(opts.Limits.MaxRequestBytes)
	lim.MaxEntries, lim.MaxDepth, lim.MaxMatches = opts.Limits.MaxEntries, opts.Limits.MaxDepth, opts.Limits.MaxMatches
	lim.CallTimeout = opts.Limits.CallTimeout
	so := mcpfs.Options{
		Manager: m, Profile: mcpfs.Profile(opts.Profile), Tools: opts.Tools,
		Limits: lim, Logger: logger, Audit: audit, Name: "agentstore", Version: opts.Version, Now: opts.Now,
	}
	if opts.Memory == "on" {
		so.Memory = st
	}
	srv, err := mcpfs.New(so)
	if err != nil {
		return cmdutil.Usagef("%s", strings.TrimPrefix(err.Error(), "artifacts: mcp: "))
	}
	if opts.HTTP == "" {
		scope, _ := opts.Scope.Scope(true, artifacts.KindSession)
		in, out := opts.Stdin, opts.Stdout
		if in == nil {
			in = os.Stdin
		}
		tuneStdioRuntime(os.Getenv)
		if out == nil {
			out = os.Stdout
		}
		return srv.ServeStdio(ctx, scope, in, out)
	}
	return serveHTTP(ctx, opts, srv, logger)
}

// callLogger logs every call on stderr at info level, as text or JSON
// after --log-format.
func callLogger(w io.Writer, cfg *cmdutil.Config) *slog.Logger {
	if cfg.LogFormat == cmdutil.LogJSON {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

func serveHTTP(ctx context.Context, opts *Options, srv *mcpfs.Server, logger *slog.Logger) error {
	tf, err := os.Open(opts.TokenFile)
	if err != nil {
		return artifacts.Errorf(artifacts.CodeIO, "mcp", err, "cannot read the token file %s", opts.TokenFile)
	}
	if fi, err := tf.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("the token file is readable by other users; chmod 600 it", "file", opts.TokenFile)
	}
	tokens, err := mcpfs.ParseTokens(tf)
	tf.Close()
	if err != nil {
		return cmdutil.Usagef("--token-file %s: %s", opts.TokenFile, strings.TrimPrefix(err.Error(), "artifacts: mcp token file: "))
	}
	ln, err := net.Listen("tcp", listenAddr(opts.HTTP))
	if err != nil {
		return artifacts.Errorf(artifacts.CodeIO, "mcp", err, "cannot listen on %s", listenAddr(opts.HTTP))
	}
	l := opts.HTTPLimits
	h := srv.HTTPHandler(mcpfs.HTTPOptions{
		Tokens: tokens, DefaultApp: opts.Scope.App, MaxSessions: opts.MaxSessions, IdleTimeout: opts.SessionIdle,
		MaxMCPSessions: l.MaxMCPSessions, MaxMCPSessionsTotal: l.MaxMCPSessionsTotal, MaxConns: l.MaxConns,
		ReadTimeout: l.ReadTimeout, WriteTimeout: l.WriteTimeout, ConnIdleTimeout: l.IdleTimeout,
	})
	logger.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp")
	err = h.Serve(ctx, ln)
	if cerr := srv.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
		err = cerr
	}
	return err
}
