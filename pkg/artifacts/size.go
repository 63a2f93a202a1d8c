package artifacts

import "math"

// MaxPlausibleSize is the largest payload size a record can state and be
// believed: 8 PiB (2^53 bytes), far beyond any file a filesystem or object
// a cloud store holds, and the largest integer a float64 (JSON readers,
// Prometheus) holds exactly. A record stating more is broken, whatever its
// checksum says: listings count it as a problem and leave it out of their
// totals.
const MaxPlausibleSize int64 = 1 << 53

// PlausibleSize reports whether n is a size a record can state: between 0
// and MaxPlausibleSize.
func PlausibleSize(n int64) bool { return n >= 0 && n <= MaxPlausibleSize }

// AddSize adds byte counts, saturating at math.MaxInt64 instead of
// wrapping around; negative counts are treated as 0.
func AddSize(total, n int64) int64 {
	if n <= 0 {
		return total
	}
	if total > math.MaxInt64-n {
		return math.MaxInt64
	}
	return total + n
}
