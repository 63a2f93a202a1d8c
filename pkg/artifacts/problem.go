package artifacts

import (
	"errors"
	"io/fs"
)

// ProblemCode classifies the error that made a version a Problem:
// permission, I/O and unsafe-store errors keep their code; anything else
// (a record that does not decode or does not belong, a payload that does
// not match) is CodeCorrupt.
func ProblemCode(err error) Code {
	switch c := CodeOf(err); c {
	case CodePermission, CodeIO, CodeUnsafeStore:
		return c
	}
	return CodeCorrupt
}

// Unreadable reports whether the problem is that the version could not be
// read (CodePermission, CodeIO): it was not checked, and is not known to be
// broken.
func (p Problem) Unreadable() bool { return p.Code == CodePermission || p.Code == CodeIO }

// Tally sums what a walk found: the versions it can count, their bytes,
// the broken versions and the unreadable ones. Listings and reports use
// it so that they agree.
type Tally struct {
	// Versions counts records that decode and state a plausible size;
	// Bytes sums their sizes, saturating at math.MaxInt64.
	Versions int64
	Bytes    int64
	// Problems counts broken versions: records that do not decode or do
	// not belong, missing payloads, non-regular layout files, and records
	// stating an impossible size (see PlausibleSize), which are not in
	// Versions and Bytes.
	Problems int
	// Unreadable counts versions that could not be read (permission or
	// I/O errors): not known to be broken, not counted as problems.
	Unreadable int
	// UnreadableCode is CodePermission when any of them was a permission
	// error, else CodeIO; empty when Unreadable is 0.
	UnreadableCode Code
	// Foreign counts objects or files in the store's namespace that are
	// not part of its layout (CodeForeign): skipped, not problems.
	Foreign int
}

// AddName adds one name's walk result.
func (t *Tally) AddName(n NameUsage) {
	for _, p := range n.Problems {
		if p.Code == CodeForeign {
			t.Foreign++
			continue
		}
		if !p.Unreadable() {
			t.Problems++
			continue
		}
		t.Unreadable++
		if t.UnreadableCode != CodePermission {
			t.UnreadableCode = p.Code
		}
	}
	for _, r := range n.Records {
		if !PlausibleSize(r.Size) {
			t.Problems++
			continue
		}
		t.Versions++
		t.Bytes = AddSize(t.Bytes, r.Size)
	}
}

// Add adds another tally.
func (t *Tally) Add(o Tally) {
	t.Versions += o.Versions
	t.Bytes = AddSize(t.Bytes, o.Bytes)
	t.Problems += o.Problems
	t.Unreadable += o.Unreadable
	t.Foreign += o.Foreign
	if o.Unreadable > 0 && t.UnreadableCode != CodePermission {
		t.UnreadableCode = o.UnreadableCode
	}
}

// ReasonOf says what went wrong, for a problem list: the message of an
// *Error without its "artifacts: OP SCOPE NAME" prefix, and for a file
// that could not be read "could not read PATH: CAUSE", without the
// system call's name.
func ReasonOf(err error) string {
	var pe *fs.PathError
	if c := CodeOf(err); (c == CodePermission || c == CodeIO) && errors.As(err, &pe) {
		return "could not read " + pe.Path + ": " + pe.Err.Error()
	}
	var e *Error
	if errors.As(err, &e) && e.Msg != "" {
		if e.Err != nil {
			return e.Msg + ": " + e.Err.Error()
		}
		return e.Msg
	}
	return err.Error()
}
