package etf

import (
	"cmp"
	"math"
	"math/big"
	"slices"
	"strings"
)

// Type ranks in Erlang term order: number < atom < reference < fun < port <
// pid < tuple < map < nil < list < bitstring. Only the supported types
// appear here.
const (
	rankNumber = iota
	rankAtom
	rankTuple
	rankMap
	rankList
	rankBinary
	rankUnknown
)

// Compare orders two terms in Erlang term order, returning -1, 0 or +1:
// number < atom < tuple < map < list (the empty list first) < binary.
//
// Numbers compare by value, integers against floats exactly (1 == 1.0);
// atoms by their text; tuples by size, then element by element; lists
// element by element, a proper prefix first; binaries byte by byte; maps by
// size, then by their keys in map-key order (where, as in Erlang, every
// integer sorts before every float and keys must match exactly), then by
// the values in that key order. Compare(a, b) == 0 is Erlang's ==.
//
// Compare accepts the values Decode returns and the values Encode accepts;
// any other value sorts after every term and equal to other such values.
func Compare(a, b any) int {
	return compareTerms(a, b, false, 0)
}

func rank(v any) int {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, *big.Int, float64:
		return rankNumber
	case Atom:
		return rankAtom
	case Tuple:
		return rankTuple
	case Map:
		return rankMap
	case []any:
		return rankList
	case string:
		return rankBinary
	}
	return rankUnknown
}

// compareTerms compares a and b. With exact set it implements the exact
// order Erlang uses for map keys: integers before floats whatever their
// value, -0.0 before 0.0, and 0 only for terms that are =:=.
func compareTerms(a, b any, exact bool, depth int) int {
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	if depth > HardMaxDepth {
		return 0
	}
	switch ra {
	case rankNumber:
		return compareNumbers(a, b, exact)
	case rankAtom:
		return strings.Compare(string(a.(Atom)), string(b.(Atom)))
	case rankBinary:
		return strings.Compare(a.(string), b.(string))
	case rankTuple:
		ta, tb := a.(Tuple), b.(Tuple)
		if c := cmp.Compare(len(ta), len(tb)); c != 0 {
			return c
		}
		for i := range ta {
			if c := compareTerms(ta[i], tb[i], exact, depth+1); c != 0 {
				return c
			}
		}
		return 0
	case rankList:
		la, lb := a.([]any), b.([]any)
		for i := range min(len(la), len(lb)) {
			if c := compareTerms(la[i], lb[i], exact, depth+1); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(la), len(lb))
	case rankMap:
		ma, mb := a.(Map), b.(Map)
		if c := cmp.Compare(len(ma), len(mb)); c != 0 {
			return c
		}
		sa, sb := sortedPairs(ma, depth), sortedPairs(mb, depth)
		for i := range sa {
			if c := compareTerms(sa[i].Key, sb[i].Key, true, depth+1); c != 0 {
				return c
			}
		}
		for i := range sa {
			if c := compareTerms(sa[i].Value, sb[i].Value, exact, depth+1); c != 0 {
				return c
			}
		}
		return 0
	}
	return 0
}

// sortedPairs returns m's pairs sorted by key in map-key order; m itself is
// left alone.
func sortedPairs(m Map, depth int) Map {
	s := slices.Clone(m)
	slices.SortStableFunc(s, func(x, y Pair) int { return compareTerms(x.Key, y.Key, true, depth+1) })
	return s
}

// number is a normalised Go number: an int64, a *big.Int or a float64.
type number struct {
	kind int // 0 int64, 1 big, 2 float
	i    int64
	b    *big.Int
	f    float64
}

func toNumber(v any) number {
	switch x := v.(type) {
	case int:
		return number{i: int64(x)}
	case int8:
		return number{i: int64(x)}
	case int16:
		return number{i: int64(x)}
	case int32:
		return number{i: int64(x)}
	case int64:
		return number{i: x}
	case uint:
		return fromUint64(uint64(x))
	case uint8:
		return number{i: int64(x)}
	case uint16:
		return number{i: int64(x)}
	case uint32:
		return number{i: int64(x)}
	case uint64:
		return fromUint64(x)
	case *big.Int:
		if x == nil {
			return number{}
		}
		if x.IsInt64() {
			return number{i: x.Int64()}
		}
		return number{kind: 1, b: x}
	case float64:
		return number{kind: 2, f: x}
	}
	return number{}
}

func fromUint64(u uint64) number {
	if u <= math.MaxInt64 {
		return number{i: int64(u)}
	}
	return number{kind: 1, b: new(big.Int).SetUint64(u)}
}

func (n number) bigInt() *big.Int {
	if n.kind == 1 {
		return n.b
	}
	return big.NewInt(n.i)
}

func compareNumbers(a, b any, exact bool) int {
	na, nb := toNumber(a), toNumber(b)
	fa, fb := na.kind == 2, nb.kind == 2
	switch {
	case !fa && !fb:
		if na.kind == 0 && nb.kind == 0 {
			return cmp.Compare(na.i, nb.i)
		}
		return na.bigInt().Cmp(nb.bigInt())
	case fa && fb:
		if c := cmp.Compare(na.f, nb.f); c != 0 || !exact {
			return c
		}
		// Equal values: order -0.0 before 0.0 so that they stay distinct.
		return -cmp.Compare(boolInt(math.Signbit(na.f)), boolInt(math.Signbit(nb.f)))
	case exact:
		// Map-key order: every integer before every float.
		if fa {
			return 1
		}
		return -1
	case fb:
		return compareIntFloat(na, nb.f)
	default:
		return -compareIntFloat(nb, na.f)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// compareIntFloat compares an integer with a float by exact value.
func compareIntFloat(n number, f float64) int {
	if math.IsNaN(f) {
		return -1
	}
	if n.kind == 0 && n.i > -(1<<53) && n.i < 1<<53 {
		return cmp.Compare(float64(n.i), f)
	}
	x := new(big.Float).SetInt(n.bigInt())
	y := new(big.Float).SetFloat64(f)
	return x.Cmp(y)
}
