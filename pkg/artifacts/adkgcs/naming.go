package adkgcs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Object names of Google ADK's GcsArtifactService, below the store's root
// (the bucket's root, or PREFIX/):
//
//	{app}/{user}/{session}/{filename}/{version}   session scope
//	{app}/{user}/user/{filename}/{version}        user scope ("user:" names)
//
// Nothing is escaped: a filename may hold slashes. adk-go, ADK Python and
// ADK Java keep the "user:" prefix in a user-scope filename
// (app/u/user/user:x.json/1); ADK JS strips it (app/u/user/x.json/0).
const (
	// UserSegment is the segment that stands where a session id would for
	// user-scope names.
	UserSegment = "user"
	// UserPrefix begins every user-scope name, as ADK names them.
	UserPrefix = "user:"
)

// form is how a user-scope filename is written in its object name.
type form uint8

const (
	formKept     form = iota // "user:" kept in the object name (Go, Python, Java)
	formStripped             // "user:" stripped (JS)
)

// parsed is one object name that parses as a version of the layout.
type parsed struct {
	scope   artifacts.Scope
	name    string // as ADK names it: user-scope names begin with "user:"
	version int64
	form    form
}

// parseObject parses an object name relative to the store's root. It
// never guesses: an object that is not exactly a version of the layout,
// or whose scope or name agentstore cannot address, is refused with the
// reason.
func parseObject(rel string) (parsed, error) {
	segs := strings.Split(rel, "/")
	if len(segs) < 5 {
		return parsed{}, fmt.Errorf("has %d path segments, fewer than {app}/{user}/{session}/{filename}/{version}", len(segs))
	}
	last := segs[len(segs)-1]
	v, ok := parseVersion(last)
	if !ok {
		return parsed{}, fmt.Errorf("does not end in a version number (%q)", clip(last))
	}
	app, user, sess := segs[0], segs[1], segs[2]
	filename := strings.Join(segs[3:len(segs)-1], "/")
	p := parsed{version: v}
	if sess == UserSegment {
		p.scope = artifacts.UserScope(app, user)
		p.name = filename
		if !strings.HasPrefix(filename, UserPrefix) {
			p.name, p.form = UserPrefix+filename, formStripped
		}
		if p.name == UserPrefix {
			return parsed{}, fmt.Errorf("has nothing after %q in its filename", UserPrefix)
		}
	} else {
		p.scope = artifacts.SessionScope(app, user, sess)
		p.name = filename
		if strings.HasPrefix(filename, UserPrefix) {
			return parsed{}, fmt.Errorf("is a %q name in a session, where ADK never writes one", UserPrefix)
		}
	}
	if err := p.scope.Validate(); err != nil {
		return parsed{}, fmt.Errorf("has a scope agentstore cannot address: %s", artifacts.ReasonOf(err))
	}
	if err := artifacts.ValidateName(p.name); err != nil {
		return parsed{}, fmt.Errorf("has a filename agentstore cannot address: %s", artifacts.ReasonOf(err))
	}
	return p, nil
}

// parseVersion parses a version segment: decimal digits, no sign, no
// leading zero (ADK writes str(int)), within int64.
func parseVersion(s string) (int64, bool) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}

// checkScope refuses a scope whose object names would be ambiguous: a
// part holding a slash, or a session named "user" (the user namespace).
func checkScope(op string, scope artifacts.Scope) error {
	for _, p := range scope.Parts() {
		if strings.Contains(p, "/") {
			return artifacts.Errorf(artifacts.CodeInvalidScope, op, nil, "scope part %q holds a slash, which the google-adk-gcs layout cannot tell from its own separators", p)
		}
	}
	if scope.Kind == artifacts.KindSession && scope.Session == UserSegment {
		return artifacts.Errorf(artifacts.CodeInvalidScope, op, nil, "a session named %q is the user namespace in the google-adk-gcs layout", UserSegment)
	}
	return nil
}

// checkName refuses a name ADK would file elsewhere: a user-scope name
// must begin with "user:", a session-scope name must not.
func checkName(op string, scope artifacts.Scope, name string) error {
	has := strings.HasPrefix(name, UserPrefix)
	switch {
	case scope.Kind == artifacts.KindUser && !has:
		return artifacts.Errorf(artifacts.CodeInvalidName, op, nil, "user-scope names begin with %q in Google ADK (want %q)", UserPrefix, UserPrefix+name)
	case scope.Kind == artifacts.KindUser && len(name) == len(UserPrefix):
		return artifacts.Errorf(artifacts.CodeInvalidName, op, nil, "name %q has nothing after %q", name, UserPrefix)
	case scope.Kind == artifacts.KindSession && has:
		return artifacts.Errorf(artifacts.CodeInvalidName, op, nil, "names beginning with %q are user-scope names in Google ADK: give only --app and --user", UserPrefix)
	}
	return nil
}

// scopePrefix is the object prefix of a scope's objects, relative to the
// root: {app}/{user}/{session}/ or {app}/{user}/user/.
func scopePrefix(scope artifacts.Scope) string {
	if scope.Kind == artifacts.KindUser {
		return scope.App + "/" + scope.User + "/" + UserSegment + "/"
	}
	return scope.App + "/" + scope.User + "/" + scope.Session + "/"
}

// filename is the object name segment(s) of name in form f.
func filename(scope artifacts.Scope, name string, f form) string {
	if scope.Kind == artifacts.KindUser && f == formStripped {
		return strings.TrimPrefix(name, UserPrefix)
	}
	return name
}
