// Package duration is the one parser of the durations operators type: in
// flags (--timeout, --idle, --grace, --older-than, ...), in environment
// variables and in config files. It reads Go's durations ("90s", "1h30m",
// "1.5s", "250ms") and two longer units, d (24 hours) and w (7 days), in
// any combination ("30d", "2w", "1d12h").
package duration

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Max is the longest duration Parse accepts: 100 years, past any retention
// or idle time an operator means and well inside time.Duration.
const Max = 100 * 365 * 24 * time.Hour

// units are the unit symbols Parse reads, longest first where one is a
// prefix of another ("ms" before "m").
var units = []struct {
	sym string
	d   time.Duration
}{
	{"ns", time.Nanosecond}, {"us", time.Microsecond}, {"µs", time.Microsecond},
	{"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute},
	{"h", time.Hour}, {"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour},
}

// Parse parses s, a sequence of numbers each followed by a unit (ns, us,
// ms, s, m, h, d, w), surrounding white space ignored. A number without
// a unit ("30"), a negative duration and one longer than Max are refused
// with an *artifacts.Error of code CodeInvalidArgument that says how to
// write one; the only unitless value taken is "0".
func Parse(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	bad := func(why string) (time.Duration, error) {
		return 0, artifacts.Errorf(artifacts.CodeInvalidArgument, "parse duration", nil,
			"%q is not a duration%s: write numbers with units (w, d, h, m, s, ms), e.g. 30d, 2w, 1d12h, 90s or 500ms", s, why)
	}
	if in == "0" {
		return 0, nil
	}
	if in == "" {
		return bad("")
	}
	if in[0] == '-' {
		return bad(" (negative)")
	}
	in = strings.TrimPrefix(in, "+")
	var total float64
	for rest := in; rest != ""; {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return bad("")
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return bad("")
		}
		rest = rest[i:]
		if rest == "" {
			return bad(" (a unit is required)")
		}
		found := false
		for _, u := range units {
			if strings.HasPrefix(rest, u.sym) {
				total += n * float64(u.d)
				rest = rest[len(u.sym):]
				found = true
				break
			}
		}
		if !found {
			return bad("")
		}
		if total > float64(Max) {
			return bad(fmt.Sprintf(" (longer than %s)", Format(Max)))
		}
	}
	return time.Duration(total), nil
}

// Format formats d in the units Parse reads, the largest first ("30d",
// "1d12h", "1h30m", "1.5s" as "1s500ms"); "0s" for zero and below.
func Format(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		sym  string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}, {1, "ns"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.sym)
			d -= n * u.unit
		}
	}
	return b.String()
}

// Value is a flag value (pflag.Value) read with Parse. Its String is Go's
// form of the duration, which viper and cast read back, and "0" for zero so
// that help shows no default for it.
type Value struct{ d *time.Duration }

// NewValue returns a Value that stores into p, set to def.
func NewValue(p *time.Duration, def time.Duration) *Value {
	*p = def
	return &Value{d: p}
}

// String returns the duration in Go's form.
func (v *Value) String() string {
	if v == nil || v.d == nil || *v.d == 0 {
		return "0"
	}
	return v.d.String()
}

// Set parses s with Parse.
func (v *Value) Set(s string) error {
	d, err := Parse(s)
	if err != nil {
		return errors.New(artifacts.ReasonOf(err))
	}
	*v.d = d
	return nil
}

// Type names the flag's type in help.
func (v *Value) Type() string { return "duration" }
