package artifacts

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a scope: app, user or session.
type Kind string

// The three scope kinds.
const (
	KindApp     Kind = "app"
	KindUser    Kind = "user"
	KindSession Kind = "session"
)

// Scope says whose an artifact is: an app's, a user's within an app, or a
// session's within a user. Only the parts its Kind has are set.
type Scope struct {
	Kind    Kind   `json:"kind"`
	App     string `json:"app"`
	User    string `json:"user,omitempty"`
	Session string `json:"session,omitempty"`
}

// AppScope returns the app scope {app, App}.
func AppScope(app string) Scope { return Scope{Kind: KindApp, App: app} }

// UserScope returns the user scope {user, App, User}.
func UserScope(app, user string) Scope { return Scope{Kind: KindUser, App: app, User: user} }

// SessionScope returns the session scope {session, App, User, Session}.
func SessionScope(app, user, session string) Scope {
	return Scope{Kind: KindSession, App: app, User: user, Session: session}
}

// MaxScopePartBytes is the longest scope part the layout allows.
const MaxScopePartBytes = 256

// Parts returns the scope's parts in tuple order.
func (s Scope) Parts() []string {
	switch s.Kind {
	case KindApp:
		return []string{s.App}
	case KindUser:
		return []string{s.App, s.User}
	default:
		return []string{s.App, s.User, s.Session}
	}
}

// String formats the scope as the Erlang tuple it stands for, with each part
// quoted, e.g. session("demo-a","user-42","session-7").
func (s Scope) String() string {
	var b strings.Builder
	b.WriteString(string(s.Kind))
	b.WriteByte('(')
	for i, p := range s.Parts() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(p))
	}
	b.WriteByte(')')
	return b.String()
}

// Validate checks the kind and every part: non-empty valid UTF-8 without
// NUL, at most 256 bytes; parts the kind does not have must be empty.
func (s Scope) Validate() error {
	bad := func(format string, args ...any) error {
		e := Errorf(CodeInvalidScope, "validate scope", nil, format, args...)
		return e
	}
	var want int
	switch s.Kind {
	case KindApp:
		want = 1
		if s.User != "" || s.Session != "" {
			return bad("an app scope has no user or session")
		}
	case KindUser:
		want = 2
		if s.Session != "" {
			return bad("a user scope has no session")
		}
	case KindSession:
		want = 3
	default:
		return bad("unknown scope kind %q", s.Kind)
	}
	labels := [...]string{"app", "user", "session"}
	for i, p := range s.Parts()[:want] {
		if err := checkPart(p); err != nil {
			return bad("%s id %s", labels[i], err)
		}
	}
	return nil
}

func checkPart(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("is empty")
	case len(p) > MaxScopePartBytes:
		return fmt.Errorf("is %d bytes, more than %d", len(p), MaxScopePartBytes)
	case !utf8.ValidString(p):
		return fmt.Errorf("is not valid UTF-8")
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("contains NUL")
	}
	return nil
}

// Hash returns the scope's directory and object key: lowercase hex of
// SHA-256 over the External Term Format encoding of the scope tuple.
func (s Scope) Hash() string {
	return hashHex(AppendScopeETF(nil, s))
}

// AppendScopeETF appends the External Term Format encoding of the scope
// tuple (0x83 first) to b: small tuple, the kind as a SMALL_ATOM_UTF8_EXT,
// then each part as a BINARY_EXT.
func AppendScopeETF(b []byte, s Scope) []byte {
	parts := s.Parts()
	b = append(b, 0x83, 0x68, byte(1+len(parts)), 0x77, byte(len(s.Kind)))
	b = append(b, s.Kind...)
	for _, p := range parts {
		b = appendBinaryETF(b, p)
	}
	return b
}

// NameHash returns the name's directory and object key: lowercase hex of
// SHA-256 over the External Term Format encoding of the name binary.
func NameHash(name string) string {
	b := make([]byte, 0, 6+len(name))
	b = append(b, 0x83)
	return hashHex(appendBinaryETF(b, name))
}

func appendBinaryETF(b []byte, s string) []byte {
	b = append(b, 0x6d)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
