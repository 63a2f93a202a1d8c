package mcpfs

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// textSlots lets the stdio transport write the large texts of tool
// results itself. The go-sdk marshals a result with encoding/json, which
// validates and compacts the output of each MarshalJSON method once more
// at every level it is nested in (the text block in the result, the
// result in the response): for a 17 KB directory listing, which the
// result carries twice (as text and as structured content), that was the
// largest part of the call's CPU time. So the handler puts a placeholder
// in place of each large text, and the transport replaces it in the
// marshaled response with the text encoded as encoding/json encodes a
// string: the bytes on the wire are the same. A placeholder is a short
// string no file or listing can hold: it starts with a NUL and carries a
// random token of the connection.
type textSlots struct {
	prefix string // of a placeholder: NUL, "agentstore-text-", token, "-"
	marker []byte // the JSON of prefix, with its opening quote

	mu    sync.Mutex
	next  uint64
	texts map[uint64]string
}

// minDeferredText is the shortest text left to the transport.
const minDeferredText = 256

// placeholderEnd is the JSON of a placeholder's end: its NUL and quote.
const placeholderEnd = `\u0000"`

func newTextSlots() *textSlots {
	var tok [16]byte
	rand.Read(tok[:])
	h := hex.EncodeToString(tok[:])
	return &textSlots{
		prefix: "\x00agentstore-text-" + h + "-",
		marker: []byte(`"\u0000agentstore-text-` + h + "-"),
		texts:  map[uint64]string{},
	}
}

// deferTexts replaces each text block of res of at least minDeferredText
// bytes, and the structured content's copies of it, with a placeholder.
func (ts *textSlots) deferTexts(res *mcp.CallToolResult) {
	if res == nil {
		return
	}
	sc, _ := res.StructuredContent.(map[string]any)
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok || len(tc.Text) < minDeferredText {
			continue
		}
		ph := ts.put(tc.Text)
		for k, v := range sc {
			if s, ok := v.(string); ok && s == tc.Text {
				sc[k] = ph
			}
		}
		tc.Text = ph
	}
}

// put keeps text and returns its placeholder.
func (ts *textSlots) put(text string) string {
	ts.mu.Lock()
	ts.next++
	n := ts.next
	ts.texts[n] = text
	ts.mu.Unlock()
	return ts.prefix + strconv.FormatUint(n, 10) + "\x00"
}

// pending reports how many texts wait for their response.
func (ts *textSlots) pending() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.texts)
}

// appendResult appends the marshaled result to buf with each placeholder
// replaced by the JSON of its text, and forgets those texts. A
// placeholder whose text is unknown is an error (it would reach the
// client otherwise).
func (ts *textSlots) appendResult(buf, result []byte) ([]byte, error) {
	var used []uint64
	var last uint64
	lastAt, lastEnd := -1, -1 // the JSON of text last in buf
	for {
		i := bytes.Index(result, ts.marker)
		if i < 0 {
			break
		}
		buf = append(buf, result[:i]...)
		rest := result[i+len(ts.marker):]
		j := 0
		for j < len(rest) && j < 20 && '0' <= rest[j] && rest[j] <= '9' {
			j++
		}
		n, err := strconv.ParseUint(string(rest[:j]), 10, 64)
		if err != nil || !bytes.HasPrefix(rest[j:], []byte(placeholderEnd)) {
			return buf, fmt.Errorf("writing a tool result: a malformed text placeholder")
		}
		if n == last && lastAt >= 0 {
			// The same text again (the structured content's copy).
			at := len(buf)
			buf = append(buf, buf[lastAt:lastEnd]...)
			lastAt, lastEnd = at, len(buf)
		} else {
			ts.mu.Lock()
			text, ok := ts.texts[n]
			ts.mu.Unlock()
			if !ok {
				return buf, fmt.Errorf("writing a tool result: text %d is not known", n)
			}
			at := len(buf)
			if buf, err = appendJSONString(buf, text); err != nil {
				return buf, err
			}
			last, lastAt, lastEnd = n, at, len(buf)
			used = append(used, n)
		}
		result = rest[j+len(placeholderEnd):]
	}
	buf = append(buf, result...)
	if len(used) > 0 {
		ts.mu.Lock()
		for _, n := range used {
			delete(ts.texts, n)
		}
		ts.mu.Unlock()
	}
	return buf, nil
}

// appendJSONString appends s encoded as json.Marshal encodes a string,
// without the copy json.Marshal returns: an Encoder writes into buf (its
// own buffer is pooled by encoding/json, so a large text allocates
// nothing once the pool has one).
func appendJSONString(buf []byte, s string) ([]byte, error) {
	b := bytes.NewBuffer(buf)
	if err := json.NewEncoder(b).Encode(s); err != nil {
		return buf, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
