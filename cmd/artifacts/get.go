package artifactscmd

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// GetOptions holds the flag values and dependencies of "artifacts get".
type GetOptions struct {
	deps
	// StoreURI returns the parsed --store, named in the output.
	StoreURI func() (cmdutil.StoreURI, error)

	// ScopeFlags are --app, --user and --session as given.
	ScopeFlags cmdutil.ScopeFlags
	// Scope is the scope they select.
	Scope artifacts.Scope
	// Name is the artifact name (--name).
	Name string
	// Version is the version to read (--version); artifacts.Latest when it
	// was not given.
	Version int64
	// Output is -O: a file to create, or "-" for standard output.
	Output string
	// Force lets -O FILE replace an existing file.
	Force bool
}

// GetResult is the JSON output of "artifacts get -O FILE" (with -O - the
// payload is the output).
type GetResult struct {
	// StoreJSON is the canonical store URI and its layout.
	cmdutil.StoreJSON
	Scope   Scope  `json:"scope"`
	Name    string `json:"name"`
	Version int64  `json:"version"`
	Size    int64  `json:"size"`
	Digest  string `json:"digest"`
	File    string `json:"file"`
}

// NewCmdGet returns "artifacts get". runF, when not nil, replaces the run
// function.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{deps: depsOf(f), StoreURI: f.StoreURI}
	cmd := &cobra.Command{
		Use:   "get --app A [--user U [--session S]] --name NAME [--version V] -O FILE|-",
		Short: "Write the verified payload of one version to a file or stdout",
		Long: `Write the payload of one version of NAME (the latest unless --version) to
FILE, or to standard output with -O -. -O DIR (an existing directory, or
a path ending in /) writes DIR/BASE, BASE being the last /-separated
element of NAME, as curl -O and gsutil cp do.

The payload is checked against what the layout stores before it is used
(size and SHA-256 in the Erlang layouts, the object's CRC32C in
google-adk-gcs, the size in google-adk-file, which stores no digest): -O FILE writes a temporary file beside FILE and renames it into place
only after the whole payload matched, so FILE is never left holding
unverified or partial bytes; an existing FILE is replaced only with
--force. With -O -, nothing is written before the whole payload matched:
payloads of up to 1 MiB are checked in memory, larger ones are first copied
to a private temporary directory in TMPDIR (which needs room for them) and
checked there; a mismatch exits 1 (code corrupt_artifact) with nothing
written. A payload that is not text is not written to a terminal.

Listing commands never print payloads; this one does, on request only.

With -O FILE the report names the store and its layout.

JSON (with -O FILE, on stdout):
  {"store": URI, "layout", "scope": S, "name", "version", "size", "digest",
   "file"}`,
		Example: `  agentstore artifacts get --store /var/lib/agents --app demo-a --user user-42 \
      --session session-7 --name reports/summary.txt -O -

  # a given version, to a file
  agentstore artifacts get --store /var/lib/agents --app demo-a \
      --name config/settings.json --version 1 -O settings-v1.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := opts.ScopeFlags.Scope(true)
			if err != nil {
				return err
			}
			opts.Scope = s
			if err := validateName(cmd, opts.Name); err != nil {
				return err
			}
			if opts.Version < 0 {
				return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("invalid --version %d: want a version number (or leave it out for the latest)", opts.Version)}
			}
			if !cmd.Flags().Changed("version") {
				opts.Version = artifacts.Latest
			}
			if opts.Output == "" {
				return cmdutil.Usagef("-O is required: -O FILE writes the payload to FILE, -O - to standard output")
			}
			if opts.Output != "-" {
				out, err := outputPath(opts.Output, opts.Name)
				if err != nil {
					return err
				}
				opts.Output = out
			}
			if opts.Output != "-" && !opts.Force {
				if _, err := os.Lstat(opts.Output); err == nil {
					return cmdutil.Usagef("%s already exists; choose another -O FILE, or add --force to replace it", opts.Output)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runGet(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.ScopeFlags)
	fl := cmd.Flags()
	fl.StringVar(&opts.Name, "name", "", "artifact name (required)")
	fl.Int64Var(&opts.Version, "version", 0, "version to read (default: the latest)")
	fl.StringVarP(&opts.Output, "output-file", "O", "", "write the payload to `FILE` (into DIR/BASE for a directory), or - for standard output (required)")
	fl.BoolVar(&opts.Force, "force", false, "replace an existing -O FILE")
	cmdutil.SetExitStatusNote(cmd, `1 also when the version does not exist (code not_found) or its payload does
  not match its record (corrupt_artifact; -O FILE is then left untouched)
2 also when -O FILE exists without --force, or a binary payload would go to
  a terminal`)
	return cmd
}

func runGet(ctx context.Context, opts *GetOptions) error {
	jsonOut, err := opts.jsonOutput()
	if err != nil {
		return err
	}
	u, err := opts.StoreURI()
	if err != nil {
		return err
	}
	st, err := opts.OpenStore(ctx)
	if err != nil {
		return err
	}
	r, err := st.Get(ctx, opts.Scope, opts.Name, opts.Version)
	if artifacts.IsNotFound(err) {
		if cerr := cmdutil.CheckScope(ctx, st, opts.Scope); cerr != nil {
			return cerr
		}
	}
	if err != nil {
		return err
	}
	defer r.Close()
	rec := r.Record()
	if opts.Output == "-" {
		return copyToStdout(opts, r)
	}
	path, err := writeVerified(opts.Output, r)
	if err != nil {
		return err
	}
	if jsonOut {
		return output.JSON(opts.IO.Out, GetResult{StoreJSON: cmdutil.NameStore(u, st).JSON(), Scope: ScopeJSON(rec.Scope), Name: rec.Name, Version: rec.Version, Size: rec.Size, Digest: rec.Digest, File: path})
	}
	fmt.Fprintln(opts.IO.Out, cmdutil.NameStore(u, st).Line(output.NewStyles(opts.IO)))
	check := "verified"
	if rec.Digest != "" {
		check = "SHA-256 " + rec.Digest + ", verified"
	}
	fmt.Fprintf(opts.IO.Out, "Wrote %s v%d of %s to %s (%s, %s)\n",
		shell.Quote(rec.Name), rec.Version, rec.Scope, path, output.Size(rec.Size), check)
	return nil
}

// copyToStdout writes the payload to standard output, refusing one that
// is not text when standard output is a terminal. Nothing reaches standard
// output before the payload's size and digest were checked: a payload of
// up to artifacts.SmallPayloadBytes is checked whole by the Reader before
// its first byte is returned, a larger one is spooled to a private
// temporary directory first (see spool).
func copyToStdout(opts *GetOptions, r *artifacts.Reader) error {
	br := bufio.NewReaderSize(r, 8<<10)
	if opts.IO.IsStdoutTTY() {
		head, err := br.Peek(8 << 10)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
		if isBinary(head) {
			rec := r.Record()
			return cmdutil.Usagef("%q v%d is binary (%s); not writing it to a terminal: use -O FILE, or pipe the output", rec.Name, rec.Version, rec.MIMEType)
		}
	}
	var src io.Reader = br
	if r.Record().Size > artifacts.SmallPayloadBytes {
		f, cleanup, err := spool(br)
		if err != nil {
			return err
		}
		defer cleanup()
		src = f
	}
	_, err := io.Copy(opts.IO.Out, src)
	return err
}

// spool copies r, a verifying reader, into a file in a new private
// temporary directory (mode 0700, in TMPDIR) and returns it open at its
// start once r reported the end of a payload that matched its record. On
// any failure nothing is left behind. cleanup closes and removes it.
// Memory stays flat: the copy goes through one fixed buffer.
func spool(r io.Reader) (*os.File, func(), error) {
	dir, err := os.MkdirTemp("", "agentstore-get-")
	if err != nil {
		return nil, nil, fileErr("cannot make a temporary directory to check the payload in before writing it (set TMPDIR to a directory with room, or use -O FILE)", err)
	}
	var f *os.File
	cleanup := func() {
		if f != nil {
			f.Close()
		}
		os.RemoveAll(dir)
	}
	f, err = spoolInto(dir, r)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return f, cleanup, nil
}

// spoolInto copies r into dir/payload and returns the file at its start;
// the caller removes dir.
func spoolInto(dir string, r io.Reader) (f *os.File, err error) {
	f, err = os.OpenFile(filepath.Join(dir, "payload"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fileErr("cannot create a temporary file in "+dir, err)
	}
	if _, err = io.Copy(f, r); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == f.Name() {
			err = fileErr("cannot spool the payload to "+dir+" before writing it (set TMPDIR to a directory with room, or use -O FILE)", err)
		}
		return f, err
	}
	if _, err = f.Seek(0, io.SeekStart); err != nil {
		return f, fileErr("cannot read back "+f.Name(), err)
	}
	return f, nil
}

// isBinary reports whether the start of a payload is not text: it holds a
// NUL byte or is not UTF-8 (a character cut at the end is allowed).
func isBinary(b []byte) bool {
	for i := 0; i < len(b); {
		c, n := utf8.DecodeRune(b[i:])
		if c == 0 || c == utf8.RuneError && n == 1 && len(b)-i >= utf8.UTFMax {
			return true
		}
		i += n
	}
	return false
}

// writeVerified copies r into a new temporary file beside path and, once
// r reported the end of a payload that matches its record, syncs it and
// renames it to path. On any failure the temporary file is removed and
// path is untouched. It returns the absolute path written.
// outputPath is the file -O o writes the payload of name to: o itself, or,
// when o is a directory (an existing one, or any path ending in a slash),
// the last element of name inside it, as curl -O and gsutil cp do.
func outputPath(o, name string) (string, error) {
	isDir := strings.HasSuffix(o, "/") || strings.HasSuffix(o, string(filepath.Separator))
	if !isDir {
		fi, err := os.Stat(o)
		isDir = err == nil && fi.IsDir()
	}
	if !isDir {
		return o, nil
	}
	base := path.Base(name)
	if base == "." || base == ".." || base == "/" || strings.ContainsRune(base, filepath.Separator) {
		return "", cmdutil.Usagef("%q has no file name to write into directory %s; give -O %s", name, o, filepath.Join(o, "FILE"))
	}
	return filepath.Join(o, base), nil
}

func writeVerified(path string, r io.Reader) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(abs)
	var tok [6]byte
	_, _ = rand.Read(tok[:])
	tmp := filepath.Join(dir, "."+filepath.Base(abs)+".agentstore-get-"+hex.EncodeToString(tok[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		return "", cmdutil.CodedError(string(artifacts.CodeNotFound), fmt.Errorf("directory %s does not exist; create it first or choose another -O FILE", dir))
	}
	if err != nil {
		return "", fileErr("cannot create a file in "+dir, err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := io.Copy(f, r); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == tmp {
			return "", fileErr("cannot write "+tmp, err)
		}
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", fileErr("cannot write "+tmp, err)
	}
	if err := f.Close(); err != nil {
		return "", fileErr("cannot write "+tmp, err)
	}
	if err := os.Rename(tmp, abs); err != nil {
		os.Remove(tmp)
		done = true
		return "", fileErr("cannot rename the verified payload to "+abs, err)
	}
	done = true
	return abs, osutil.SyncDir(dir)
}

// fileErr describes a local file failure without the system call's name.
func fileErr(what string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	code := artifacts.CodeIO
	if errors.Is(err, fs.ErrPermission) {
		code = artifacts.CodePermission
	}
	return cmdutil.CodedError(string(code), fmt.Errorf("%s: %v", what, err))
}
