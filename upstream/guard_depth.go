package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
)

// defaultMaxSchemaDepth is HubOptions.MaxSchemaDepth's default: the deepest
// nesting of objects and arrays one tool of a tools/list answer may have,
// counting the tool object itself as 1 (a tool whose input schema has flat
// properties is 4 deep). The deepest of the 2,671 tools of a catalog of 73
// real servers is 25, of 9,309 tools in five public datasets 8; the MCP
// SDK decodes no message deeper than sdkMaxDepth. See docs/limits.md.
const defaultMaxSchemaDepth = 64

// sdkMaxDepth is the deepest nesting of a JSON-RPC message the go-sdk
// decodes (defaultMaxDepth in its internal/json): a deeper message fails to
// decode, and a stdio or HTTP connection that reads one ends.
const sdkMaxDepth = 1000

// deepTool is a tool a server listed nested deeper than
// HubOptions.MaxSchemaDepth: dropped before decoding, named in the server's
// warnings.
type deepTool struct {
	name  string
	depth int
}

// deepFilter rewrites a server's messages before the SDK decodes them, so
// that one deeply nested tool costs that tool, not the server: a tools/list
// answer loses its tools deeper than max (recorded for the server's
// warnings), and any other message the SDK could not decode becomes a
// JSON-RPC error answering its request, or is dropped with a warning when
// nobody waits for it. One per server, shared by its connections.
type deepFilter struct {
	server string
	max    int // the deepest tool kept; 0 for only the SDK's limit
	sdk    int // the SDK's limit, sdkMaxDepth (smaller in a fuzz test)
	logger *slog.Logger

	mu      sync.Mutex
	dropped []deepTool

	// note, if set, sees every message of the server as the transports
	// read it, in order, before the SDK decodes it (inflight.noteMessage).
	note func(msg []byte)
}

// saw hands msg, a JSON-RPC message or batch the server wrote, to note.
func (f *deepFilter) saw(msg []byte) {
	if f != nil && f.note != nil {
		f.note(msg)
	}
}

// take returns the tools dropped since the last take.
func (f *deepFilter) take() []deepTool {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.dropped
	f.dropped = nil
	return d
}

// needs reports whether a message depth levels deep must go through
// filter: deeper than the SDK decodes, or deep enough to hold a tool
// deeper than max ({ "result": { "tools": [ tool: 3 levels above a tool).
func (f *deepFilter) needs(depth int) bool {
	if f == nil {
		return false
	}
	return depth > f.sdk || f.max > 0 && depth > f.max+3
}

// filter returns msg (a JSON-RPC message or batch, depth levels deep) as
// the SDK should see it: msg itself when nothing is too deep, a rewritten
// copy, or nil when it is dropped.
func (f *deepFilter) filter(msg []byte, depth int) []byte {
	if !f.needs(depth) {
		return msg
	}
	b := bytes.TrimSpace(msg)
	if len(b) > 0 && b[0] == '[' {
		var out [][]byte
		arrayElements(b, 0, func(s, e, d int) bool {
			if m := f.one(b[s:e], d); m != nil {
				out = append(out, m)
			}
			return true
		})
		if len(out) == 0 {
			return nil
		}
		return append(append([]byte{'['}, bytes.Join(out, []byte{','})...), ']')
	}
	return f.one(b, depth)
}

// one filters a single message.
func (f *deepFilter) one(m []byte, depth int) []byte {
	if !f.needs(depth) {
		return m
	}
	var id, method, result [2]int
	var resultDepth int
	objectMembers(m, 0, func(key []byte, s, e, d int) bool {
		switch {
		case keyIs(key, "id"):
			id = [2]int{s, e}
		case keyIs(key, "method"):
			method = [2]int{s, e}
		case keyIs(key, "result"):
			result, resultDepth = [2]int{s, e}, d
		}
		return true
	})
	if result[1] > 0 && (resultDepth > f.sdk-1 || f.max > 0 && resultDepth > f.max+2) {
		if r, ok := f.dropDeepTools(m[result[0]:result[1]]); ok {
			m = append(append(append([]byte{}, m[:result[0]]...), r...), m[result[1]:]...)
			if depth = jsonDepth(m); depth <= f.sdk {
				return m
			}
		}
	}
	if depth <= f.sdk {
		return m
	}
	what := "message"
	if method[1] > 0 {
		what = "request " + truncate(string(m[method[0]:method[1]]), 60)
		if id[1] == 0 {
			what = "notification " + truncate(string(m[method[0]:method[1]]), 60)
		}
	}
	if id[1] > 0 && !scalarID(m[id[0]:id[1]]) {
		id = [2]int{} // an id nested itself: no error could carry it
	}
	if id[1] == 0 || method[1] > 0 {
		// Nobody on our side waits for it: a notification, or a request
		// whose server times out waiting for our answer.
		f.logger.Warn("upstream: dropped a message nested deeper than the MCP SDK decodes",
			"server", f.server, "message", what, "depth", depth, "limit", f.sdk)
		return nil
	}
	text := fmt.Sprintf("server %s sent a response nested %d levels deep, deeper than the %d the MCP SDK decodes; dropped", f.server, depth, f.sdk)
	q, _ := json.Marshal(text)
	out := []byte(`{"jsonrpc":"2.0","id":`)
	out = append(out, m[id[0]:id[1]]...)
	out = append(out, `,"error":{"code":-32603,"message":`...)
	out = append(out, q...)
	return append(out, "}}"...)
}

// warning is the server's warning about a dropped tool (ServerStatus
// and the log's "warning" attribute say the same).
func (f *deepFilter) warning(d deepTool) string {
	return fmt.Sprintf("tool %q: nested %d levels deep, over the limit of %d (HubOptions.MaxSchemaDepth); dropped", d.name, d.depth, f.limit())
}

// limit is the deepest tool kept: max, or what fits the SDK's limit.
func (f *deepFilter) limit() int {
	if f.max <= 0 || f.max > f.sdk-3 {
		return f.sdk - 3
	}
	return f.max
}

// scalarID reports whether v, an id as written, is a string or a number
// (the only ids JSON-RPC allows), not an array or object.
func scalarID(v []byte) bool {
	return len(v) > 0 && (v[0] == '"' || v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}

// dropDeepTools returns result, a tools/list result object, without the
// tools deeper than the limit; ok is false when result has no tools array.
func (f *deepFilter) dropDeepTools(result []byte) (_ []byte, ok bool) {
	limit := f.limit()
	var tools [2]int
	objectMembers(result, 0, func(key []byte, s, e, _ int) bool {
		if keyIs(key, "tools") && s < len(result) && result[s] == '[' {
			tools = [2]int{s, e}
		}
		return true
	})
	if tools[1] == 0 {
		return nil, false
	}
	arr := result[tools[0]:tools[1]]
	var kept [][]byte
	var dropped []deepTool
	i := 0
	arrayElements(arr, 0, func(s, e, d int) bool {
		i++
		if d <= limit {
			kept = append(kept, arr[s:e])
			return true
		}
		name := fmt.Sprintf("#%d of the page (no name)", i)
		objectMembers(arr[s:e], 0, func(key []byte, vs, ve, _ int) bool {
			if keyIs(key, "name") {
				var n string
				if json.Unmarshal(arr[s+vs:s+ve], &n) == nil {
					name = n
				}
				return false
			}
			return true
		})
		dropped = append(dropped, deepTool{name: name, depth: d})
		return true
	})
	f.mu.Lock()
	f.dropped = append(f.dropped, dropped...)
	f.mu.Unlock()
	for _, d := range dropped {
		f.logger.Warn("upstream: dropped a tool nested too deep (HubOptions.MaxSchemaDepth)",
			"server", f.server, "tool", d.name, "depth", d.depth, "limit", limit, "warning", f.warning(d))
	}
	out := append([]byte{}, result[:tools[0]]...)
	out = append(out, '[')
	out = append(out, bytes.Join(kept, []byte{','})...)
	out = append(out, ']')
	return append(out, result[tools[1]:]...), true
}

// The scanner below reads just enough JSON to find a message's members and
// their nesting: strings (with escapes) are skipped, brackets counted, and
// nothing recurses, so a 100,000-level message costs one pass and no
// stack. It does not validate: json.Valid does that after it.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// scanString returns the end of the string starting at b[i] == '"'.
func scanString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// scanValue returns the end of the value starting at b[i] (after spaces)
// and its nesting depth (0 for a scalar, 1 for a flat object or array).
func scanValue(b []byte, i int) (start, end, depth int, ok bool) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return 0, 0, 0, false
	}
	start = i
	switch b[i] {
	case '"':
		end, ok = scanString(b, i)
		return start, end, 0, ok
	case '{', '[':
		d := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				e, ok := scanString(b, i)
				if !ok {
					return 0, 0, 0, false
				}
				i = e - 1
			case '{', '[':
				d++
				depth = max(depth, d)
			case '}', ']':
				d--
				if d == 0 {
					return start, i + 1, depth, true
				}
			}
		}
		return 0, 0, 0, false
	case '}', ']', ',', ':':
		return 0, 0, 0, false
	default:
		for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return start, i, 0, true
	}
}

// jsonDepth is the nesting depth of the value in b.
func jsonDepth(b []byte) int {
	_, _, d, _ := scanValue(b, 0)
	return d
}

// objectMembers calls f with each member of the object starting at b[i]
// (after spaces): its key as written (quotes and escapes included), and
// its value's bounds and depth, until f returns false. It returns the end
// of the object and the object's depth.
func objectMembers(b []byte, i int, f func(key []byte, start, end, depth int) bool) (end, depth int, ok bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, 1, true
	}
	call := f != nil
	for i < len(b) {
		if b[i] != '"' {
			return 0, 0, false
		}
		ke, ok := scanString(b, i)
		if !ok {
			return 0, 0, false
		}
		key := b[i:ke]
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, false
		}
		s, e, d, ok := scanValue(b, i+1)
		if !ok {
			return 0, 0, false
		}
		depth = max(depth, d)
		if call && !f(key, s, e, d) {
			call = false
		}
		i = skipSpace(b, e)
		if i >= len(b) {
			return 0, 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, depth + 1, true
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// arrayElements calls f with the bounds and depth of each element of the
// array starting at b[i] (after spaces) until f returns false. It returns
// the end of the array and its depth.
func arrayElements(b []byte, i int, f func(start, end, depth int) bool) (end, depth int, ok bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return 0, 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, 1, true
	}
	call := f != nil
	for i < len(b) {
		s, e, d, ok := scanValue(b, i)
		if !ok {
			return 0, 0, false
		}
		depth = max(depth, d)
		if call && !f(s, e, d) {
			call = false
		}
		i = skipSpace(b, e)
		if i >= len(b) {
			return 0, 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, depth + 1, true
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// keyIs reports whether key, a JSON string as written, is want.
func keyIs(key []byte, want string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return len(key) == len(want)+2 && string(key[1:len(key)-1]) == want
	}
	s, err := strconv.Unquote(string(key))
	if err != nil {
		var js string
		if json.Unmarshal(key, &js) != nil {
			return false
		}
		s = js
	}
	return s == want
}

// jsonrpcShape reports whether b (trimmed) looks like a JSON-RPC 2.0
// message or batch, as encoding/json would decode it into a struct with a
// JSONRPC field: an object whose "jsonrpc" member (matched without regard
// to case, the last one winning, null leaving it unset) is the string
// "2.0", or a non-empty array of them; and returns its nesting depth. It
// does not check that the rest is valid JSON.
func jsonrpcShape(b []byte) (ok bool, depth int) {
	if len(b) == 0 {
		return false, 0
	}
	one := func(b []byte, i int) (end, depth int, ok bool) {
		version, bad := "", false
		end, depth, ok = objectMembers(b, i, func(key []byte, s, e, _ int) bool {
			if len(key) < 9 || !keyFolds(key, "jsonrpc") {
				return true
			}
			switch v := b[s:e]; {
			case string(v) == "null":
			case v[0] == '"':
				var str string
				if json.Unmarshal(v, &str) != nil {
					bad = true
					return false
				}
				version = str
			default:
				bad = true
				return false
			}
			return true
		})
		return end, depth, ok && !bad && version == "2.0"
	}
	var end int
	switch b[0] {
	case '{':
		end, depth, ok = one(b, 0)
	case '[':
		n := 0
		all := true
		end, depth, ok = arrayElements(b, 0, func(s, e, _ int) bool {
			n++
			if _, _, ok := one(b[:e], s); !ok {
				all = false
				return false
			}
			return true
		})
		ok = ok && all && n > 0
	default:
		return false, 0
	}
	return ok && end == len(b), depth
}

// keyFolds reports whether key, a JSON string as written, equals want
// under the case folding encoding/json applies to field names.
func keyFolds(key []byte, want string) bool {
	s := string(key[1 : len(key)-1])
	if strings.IndexByte(s, '\\') >= 0 {
		if json.Unmarshal(key, &s) != nil {
			return false
		}
	}
	return strings.EqualFold(s, want)
}
