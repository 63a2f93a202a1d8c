// Package zipsafe writes directory trees to zip archives and extracts zip
// archives into directories, treating every archive as hostile.
//
// It is meant for per-session agent workspaces: a workspace is packed with
// [Write] and restored ("hydrated") with [Extract] or [ExtractFile].
//
// Writing streams the archive to an io.Writer; memory use does not depend on
// the size of the tree apart from the archive's central directory. The tree is
// read through an [os.Root], regular files and directories only, in lexical
// order, with the owner's executable bit kept in the entry's Unix mode.
//
// Extraction is all or nothing. The archive is first validated as a whole
// (names, entry types, flags, methods, duplicates, file/directory collisions,
// overlapping data ranges, declared sizes against the limits), then extracted
// into a fresh temporary directory next to the target, through an [os.Root],
// counting the bytes actually produced (declared sizes are never trusted) and
// checking every CRC. Only when everything succeeded is the temporary
// directory renamed into place. On any error the target is left exactly as it
// was and the temporary directory is removed.
//
// Both directions use every core: [Write] reads and compresses files
// ahead of the archive on one worker per core (within a fixed memory
// budget) and writes them in order; [Extract] creates the validated
// files on up to four workers (one when the entries are small). Deflate
// is github.com/klauspost/compress's (faster than compress/flate both
// ways, same format), except that Extract inflates an entry whose
// compressed data fits in its 1 MiB window on the archive with an
// in-memory inflater of its own (faster again; it accepts exactly the
// streams compress/flate accepts); files that would not shrink (already
// compressed formats by name, anything else by a trial) are stored.
//
// Every refusal is an [*Error] carrying a stable [Code] and the name of the
// offending entry; use [CodeOf] to classify an error.
//
// Extracted files are created with mode 0600, or 0700 when the entry had any
// executable bit; directories are created 0700. Set-user-ID, set-group-ID and
// sticky bits are never applied. Modification times are not restored.
package zipsafe

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Code classifies an [Error]. Codes are stable strings suitable for logs,
// metrics and API responses.
type Code string

// Error codes returned by [Write], [Extract] and [ExtractFile].
const (
	// CodeUnsafePath: an entry or file name is absolute, contains "..", ".",
	// an empty component, a backslash, a drive letter, NUL or another control
	// character, is not valid UTF-8, or exceeds the path length or depth limits.
	CodeUnsafePath Code = "unsafe_path"
	// CodeDuplicateEntry: two entries have the same name (also "a" and "a/"),
	// or a name is used both as a file and as a directory ("a" and "a/b").
	CodeDuplicateEntry Code = "duplicate_entry"
	// CodeUnsupportedEntryType: an archive entry is a symbolic link, device,
	// FIFO, socket or another non-regular, non-directory type.
	CodeUnsupportedEntryType Code = "unsupported_entry_type"
	// CodeUnsupportedCompression: an entry uses a method other than Store or Deflate.
	CodeUnsupportedCompression Code = "unsupported_compression"
	// CodeEncryptedEntry: an entry has the encryption flag set.
	CodeEncryptedEntry Code = "encrypted_entry"
	// CodeChecksumMismatch: the CRC-32 of the extracted data differs from the
	// archive's.
	CodeChecksumMismatch Code = "checksum_mismatch"
	// CodeSizeMismatch: an entry produced more or fewer bytes than its
	// declared uncompressed size, or a stored entry's sizes disagree.
	CodeSizeMismatch Code = "size_mismatch"
	// CodeTooManyEntries: the archive or tree has more entries than Limits.MaxEntries.
	CodeTooManyEntries Code = "too_many_entries"
	// CodeTooLarge: the total uncompressed size exceeds Limits.MaxBytes.
	CodeTooLarge Code = "too_large"
	// CodeRatioExceeded: an entry's compression ratio exceeds Limits.MaxRatio.
	CodeRatioExceeded Code = "ratio_exceeded"
	// CodeOverlappingEntries: two entries share bytes of the archive (the
	// overlapping-entry "zip bomb" construction).
	CodeOverlappingEntries Code = "overlapping_entries"
	// CodeCorruptArchive: the archive cannot be parsed, is truncated, an
	// entry's data is not valid for its method, or a directory entry has data.
	CodeCorruptArchive Code = "corrupt_archive"
	// CodeUnsupportedFileType: [Write] met a symbolic link, device, FIFO,
	// socket or other non-regular file, or a file or directory changed type
	// while it was being read; also used for such a file under a Keep name.
	CodeUnsupportedFileType Code = "unsupported_file_type"
	// CodeIO: an operating-system or writer error unrelated to the archive's
	// content (disk full, permission denied, target not a directory, ...).
	CodeIO Code = "io_error"
)

// Error is the error type returned by this package.
type Error struct {
	// Code classifies the failure.
	Code Code
	// Entry is the archive entry name (for Extract) or the slash-separated
	// path relative to the root (for Write) that caused the failure; empty
	// when the failure concerns the archive or target as a whole.
	Entry string
	// Err is the underlying cause, if any.
	Err error
}

// Error returns "zipsafe: <code>: entry <quoted entry>: <cause>". The entry
// is quoted with %q so hostile names cannot inject control characters into logs.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("zipsafe: ")
	b.WriteString(string(e.Code))
	if e.Entry != "" {
		fmt.Fprintf(&b, ": entry %q", e.Entry)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the [Code] of the first [*Error] in err's chain, or "" if
// err is nil or not produced by this package.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newErr(code Code, entry string, format string, args ...any) *Error {
	return &Error{Code: code, Entry: entry, Err: fmt.Errorf(format, args...)}
}

func wrapErr(code Code, entry string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: code, Entry: entry, Err: err}
}

// Limits bounds the work done by [Write] and [Extract]. A zero field selects
// the corresponding value from [DefaultLimits]; a negative field disables
// that limit (MaxComponentBytes and MaxPathBytes are always enforced).
type Limits struct {
	// MaxEntries is the maximum number of entries (files plus explicit
	// directory entries).
	MaxEntries int
	// MaxBytes is the maximum total number of uncompressed bytes. Extract
	// counts the bytes it actually writes; declared sizes are only used to
	// refuse early.
	MaxBytes int64
	// MaxRatio is the maximum ratio of uncompressed to compressed size of a
	// single entry, applied once the entry exceeds RatioFloor uncompressed
	// bytes. Used by Extract only.
	MaxRatio int64
	// MaxDepth is the maximum number of path components in a name.
	MaxDepth int
}

// Fixed limits on names. They are not configurable.
const (
	// MaxComponentBytes is the maximum length of one path component.
	MaxComponentBytes = 255
	// MaxPathBytes is the maximum length of a whole entry name.
	MaxPathBytes = 4096
	// RatioFloor is the uncompressed size below which Limits.MaxRatio is not
	// applied, so tiny highly compressible files are always accepted.
	RatioFloor = 1 << 20
)

// DefaultLimits returns the limits used for zero fields of [Limits]:
// 100,000 entries, 4 GiB, ratio 200, depth 128.
func DefaultLimits() Limits {
	return Limits{MaxEntries: 100_000, MaxBytes: 4 << 30, MaxRatio: 200, MaxDepth: 128}
}

// Resolved returns l with its zero fields set from DefaultLimits: the
// limits every reader of archives and manifests enforces.
func (l Limits) Resolved() Limits {
	d := DefaultLimits()
	if l.MaxEntries == 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxRatio == 0 {
		l.MaxRatio = d.MaxRatio
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = d.MaxDepth
	}
	return l
}

// checkName validates an archive entry name (slash separated, a trailing
// slash marks a directory). It returns a description of the problem, or "".
func checkName(name string, maxDepth int) string {
	if name == "" {
		return "empty name"
	}
	if len(name) > MaxPathBytes {
		return fmt.Sprintf("name longer than %d bytes", MaxPathBytes)
	}
	if !utf8.ValidString(name) {
		return "name is not valid UTF-8"
	}
	for _, r := range name {
		switch {
		case r == 0:
			return "name contains NUL"
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return "name contains a control character"
		case r == '\\':
			return "name contains a backslash"
		}
	}
	if name[0] == '/' {
		return "absolute path"
	}
	if len(name) >= 2 && name[1] == ':' && ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')) {
		return "drive letter"
	}
	trimmed := strings.TrimSuffix(name, "/")
	depth := 0
	for comp := range strings.SplitSeq(trimmed, "/") {
		depth++
		switch {
		case comp == "":
			return "empty path component"
		case comp == "..":
			return `".." path component`
		case comp == ".":
			return `"." path component`
		case len(comp) > MaxComponentBytes:
			return fmt.Sprintf("path component longer than %d bytes", MaxComponentBytes)
		}
	}
	if maxDepth > 0 && depth > maxDepth {
		return fmt.Sprintf("more than %d path components", maxDepth)
	}
	return ""
}

// CheckName reports whether name is a path that [Write] can archive and
// [Extract] would accept under lim: slash separated, relative, valid UTF-8,
// without NUL, control characters (C0, DEL, C1), backslashes, a drive
// letter, "." or ".." or empty components, components longer than
// MaxComponentBytes, more than MaxPathBytes in all or more than
// lim.MaxDepth components (zero: the default). A trailing slash marks a
// directory. It returns nil or an [*Error] of code [CodeUnsafePath] saying
// what is wrong. Callers that accept names for files they will archive
// later (a workspace's confined API) check them here, so that one rule
// decides what can be archived.
func CheckName(name string, lim Limits) error {
	if msg := checkName(name, lim.Resolved().MaxDepth); msg != "" {
		return newErr(CodeUnsafePath, name, "%s", msg)
	}
	return nil
}
