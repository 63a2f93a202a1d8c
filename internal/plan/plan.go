// Package plan holds what every plan-then-confirm command shares: the
// canonical JSON of a plan's body, its plan_id, and the parsing of a
// confirmation that is either a plan_id or the whole plan.
//
// A plan's body is a struct whose field order is part of its definition:
// Canonical is encoding/json of that struct with no indentation, no trailing
// newline and HTML escaping off, and ID is the lowercase hex SHA-256 of it.
package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Canonical returns the canonical JSON of a plan body.
func Canonical(body any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ID returns the plan_id of a plan body: the lowercase hex SHA-256 of its
// canonical JSON.
func ID(body any) (string, error) {
	c, err := Canonical(body)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// IsID reports whether s has the form of a plan_id: 64 lowercase hex
// characters.
func IsID(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseError says a confirmation is neither a plan_id nor a plan.
type ParseError struct{ Msg string }

// Error returns the message.
func (e *ParseError) Error() string { return e.Msg }

func parseErrorf(format string, args ...any) *ParseError {
	return &ParseError{Msg: fmt.Sprintf(format, args...)}
}

// Parse parses a confirmation: a plan_id, returned as id with a nil plan,
// or exactly one JSON object with no unknown field, decoded into a new P.
// Anything else is a *ParseError saying why; kind names the plan in it
// ("delete plan"). Parse does not check the plan's integrity.
func Parse[P any](s, kind string) (p *P, id string, err error) {
	t := strings.TrimSpace(s)
	if IsID(t) {
		return nil, t, nil
	}
	if !strings.HasPrefix(t, "{") {
		return nil, "", parseErrorf("the confirmation is neither a plan_id (64 lowercase hex characters) nor a plan in JSON")
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.DisallowUnknownFields()
	p = new(P)
	if err := dec.Decode(p); err != nil {
		return nil, "", parseErrorf("the confirmation is not a %s: %v", kind, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, "", parseErrorf("the confirmation holds more than one JSON value")
	}
	return p, "", nil
}

// Read reads a confirmation of at most max bytes from r (a file or
// standard input) and parses it with Parse. A confirmation past max bytes
// is a *ParseError; a read error is returned as is.
func Read[P any](r io.Reader, max int, kind string) (p *P, id string, err error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, "", err
	}
	if len(b) > max {
		return nil, "", parseErrorf("the confirmation is larger than %d bytes", max)
	}
	return Parse[P](string(b), kind)
}

// The codes of a ConfirmationError.
const (
	CodeConfirmationRequired = "confirmation_required"
	CodeStaleConfirmation    = "stale_confirmation"
)

// ConfirmationError is the one error of every plan-then-confirm command:
// the command needs a confirmation, or the confirmation given does not
// match the plan computed again (Stale), or was modified or made for
// another command. Nothing was changed. Its ErrorCode makes the command
// line exit with status 4.
type ConfirmationError struct {
	// Stale is true when a confirmation was given but no longer matches.
	Stale bool
	// Msg explains what happened and what to do next.
	Msg string
}

// Error returns Msg.
func (e *ConfirmationError) Error() string { return e.Msg }

// ErrorCode returns "stale_confirmation" or "confirmation_required".
func (e *ConfirmationError) ErrorCode() string {
	if e.Stale {
		return CodeStaleConfirmation
	}
	return CodeConfirmationRequired
}
