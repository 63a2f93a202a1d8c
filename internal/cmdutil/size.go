package cmdutil

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// SizeHelp says how every SIZE flag and config key is read; commands with
// a size flag end their long help with it.
const SizeHelp = `A SIZE is a byte count, or a number with a unit: KB, MB, GB and TB are
powers of 1000 (SI: 5GB is 5,000,000,000 bytes); KiB, MiB, GiB and TiB,
and the short K, M, G and T, are powers of 1024 (IEC: 5GiB is
5,368,709,120 bytes). Units are case-insensitive.`

// sizeUnits maps an upper-cased unit to its multiplier: SI units (KB, MB,
// GB, TB) are powers of 1000, IEC units (KiB, ...) and the one-letter
// forms powers of 1024.
var sizeUnits = map[string]float64{
	"": 1, "B": 1,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20,
	"G": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TIB": 1 << 40,
}

// ParseSize parses a byte count: a plain integer, or a number with a unit
// as SizeHelp describes (5GB is 5*10^9 bytes, 5GiB and 5G are 5*2^30).
// The empty string is 0.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	num, unit := s, ""
	if i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }); i >= 0 {
		num, unit = strings.TrimSpace(s[:i]), strings.ToUpper(strings.TrimSpace(s[i:]))
	}
	mult := sizeUnits[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v <= 0 || v*mult >= 1<<62 {
		return 0, fmt.Errorf("%q is not a size like 1048576, 500MB (SI, powers of 1000) or 512MiB (IEC, powers of 1024)", s)
	}
	return int64(v * mult), nil
}

// NoteSizes ends cmd's long help with SizeHelp: call it on every command
// that takes a SIZE flag.
func NoteSizes(cmd *cobra.Command) {
	cmd.Long = strings.TrimRight(cmd.Long, "\n") + "\n\n" + SizeHelp
}
