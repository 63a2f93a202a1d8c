package etf_test

import (
	"crypto/sha256"
	"fmt"

	"github.com/agentstore/agentstore/internal/etf"
)

func Example() {
	// Hash a scope the way the Erlang ADK does: SHA-256 over its ETF bytes.
	scope := etf.Tuple{etf.Atom("app"), "demo-a"}
	b, err := etf.Encode(scope)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", b)
	fmt.Printf("%x\n", sha256.Sum256(b))

	// Decode a record with limits; map keys keep their file order.
	rec, err := etf.Encode(etf.Map{{etf.Atom("version"), 3}, {etf.Atom("size"), int64(1) << 40}})
	if err != nil {
		panic(err)
	}
	v, err := etf.Decode(rec, etf.Limits{MaxDepth: 8, MaxEntries: 128, MaxBytes: 65536})
	if err != nil {
		panic(err)
	}
	for _, p := range v.(etf.Map) {
		fmt.Printf("%v = %v (%T)\n", p.Key, p.Value, p.Value)
	}

	// Errors carry the offset of the bad byte.
	_, err = etf.Decode([]byte{131, 0x71}, etf.Limits{})
	fmt.Println(err)
	// Output:
	// 83680277036170706d0000000664656d6f2d61
	// 1d1359949b5515daf997588c856c812d7b20c2eb035c2d891edce83cf088741f
	// size = 1099511627776 (int64)
	// version = 3 (int64)
	// etf: offset 1: unknown tag 0x71
}
