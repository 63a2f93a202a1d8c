package cmdutil

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a byte count: a plain integer, or one with a binary
// unit (KiB, MiB, GiB, TiB; K, M, G, T and KB, MB, GB, TB mean the same).
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
	mult := map[string]float64{"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
		"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v <= 0 || v*mult >= 1<<62 {
		return 0, fmt.Errorf("%q is not a size like 1048576, 512MiB or 4GiB", s)
	}
	return int64(v * mult), nil
}
