package upstream

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func deepJSONText(levels int) string {
	return strings.Repeat(`{"a":`, levels) + `"]}[\"{"` + strings.Repeat("}", levels)
}

// TestDeepFilter: the filter keeps what is shallow byte for byte, cuts deep
// tools out of a tools/list result (escaped keys, brackets in strings,
// batches), answers a deep response with an error for its id, and drops a
// deep notification.
func TestDeepFilter(t *testing.T) {
	f := &deepFilter{server: "s", max: 10, sdk: sdkMaxDepth, logger: slog.New(slog.DiscardHandler)}
	deep := deepJSONText(20)
	list := `{"jsonrpc":"2.0","id":7,"result":{"nextCursor":"[[[","tools":[{"name":"a","inputSchema":{"type":"object"}},` +
		`{"inputSchema":` + deep + `,"name":"deep\u0021"},{"name":"b"}]}}`
	for _, tc := range []struct{ name, in, want string }{
		{"shallow", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x"}]}}`, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x"}]}}`},
		{"deep tool", list, `{"jsonrpc":"2.0","id":7,"result":{"nextCursor":"[[[","tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b"}]}}`},
		{"escaped keys", strings.ReplaceAll(list, `"tools"`, `"t\u006fols"`), `{"jsonrpc":"2.0","id":7,"result":{"nextCursor":"[[[","t\u006fols":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b"}]}}`},
		{"batch", `[` + list + `,{"jsonrpc":"2.0","method":"m","params":` + deepJSONText(1200) + `}]`, `[{"jsonrpc":"2.0","id":7,"result":{"nextCursor":"[[[","tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b"}]}}]`},
		{"deep answer", `{"id":"x","jsonrpc":"2.0","result":` + deepJSONText(1000) + `}`, `{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"server s sent a response nested 1001 levels deep, deeper than the 1000 the MCP SDK decodes; dropped"}}`},
		{"deep id", `{"id":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `,"jsonrpc":"2.0","result":{}}`, ``},
		{"deep notification", `{"jsonrpc":"2.0","method":"m","params":` + deepJSONText(1000) + `}`, ``},
	} {
		ok, depth := jsonrpcShape([]byte(tc.in))
		if !ok {
			t.Errorf("%s: not JSON-RPC", tc.name)
			continue
		}
		got := string(f.filter([]byte(tc.in), depth))
		if got != tc.want {
			t.Errorf("%s:\n got %.300s\nwant %.300s", tc.name, got, tc.want)
		}
		if got != "" && !json.Valid([]byte(got)) {
			t.Errorf("%s: not valid JSON: %.300s", tc.name, got)
		}
	}
	if d := f.take(); len(d) != 3 || d[0] != (deepTool{"deep!", 21}) {
		t.Errorf("dropped %v, want deep! (21 levels) three times", d)
	}
}

func BenchmarkIsJSONRPC(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"result":{"tools":[` + strings.Repeat(`{"name":"search_issues","description":"Search issues \"by\" query.","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"query"},"limit":{"type":"integer"}},"required":["q"]}},`, 200) + `{"name":"x"}]}}`)
	for _, fn := range []struct {
		name string
		f    func([]byte) bool
	}{{"scan", isJSONRPC}, {"unmarshal", isJSONRPCUnmarshal}} {
		b.Run(fn.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if !fn.f(line) {
					b.Fatal("not JSON-RPC")
				}
			}
		})
	}
}

func BenchmarkJSONRPCShape(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"result":{"tools":[` + strings.Repeat(`{"name":"search_issues","description":"Search issues \"by\" query.","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"query"},"limit":{"type":"integer"}},"required":["q"]}},`, 200) + `{"name":"x"}]}}`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		jsonrpcShape(line)
	}
}

// FuzzDeepFilter: whatever a server sends that looks like JSON-RPC, what
// the filter passes on is valid JSON the SDK decodes (no deeper than its
// limit), or nothing; shallow messages pass unchanged.
func FuzzDeepFilter(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":` + deepJSONText(12) + `},{"name":"b"}]}}`,
		`[{"jsonrpc":"2.0","method":"m","params":` + deepJSONText(20) + `},{"jsonrpc":"2.0","id":"x","result":[[[[[[]]]]]]}]`,
		`{"jsonrpc":"2.0","id":[[[[[[[[]]]]]]]],"result":{}}`,
	} {
		f.Add([]byte(s), uint8(4))
	}
	f.Fuzz(func(t *testing.T, in []byte, max uint8) {
		// A small SDK limit stands in for the real one: the fuzzer finds
		// shapes, not sizes. Tools deeper than max are dropped.
		fl := &deepFilter{server: "s", max: int(max % 16), sdk: 24, logger: slog.New(slog.DiscardHandler)}
		b := bytes.TrimSpace(in)
		ok, depth := jsonrpcShape(b)
		if !ok || !json.Valid(b) {
			return
		}
		out := fl.filter(b, depth)
		if !fl.needs(depth) && !bytes.Equal(out, b) {
			t.Fatalf("shallow %q changed to %q", b, out)
		}
		if out != nil && !json.Valid(out) {
			t.Fatalf("%q filtered to invalid %q", b, out)
		}
		if out != nil && jsonDepth(out) > fl.sdk {
			t.Fatalf("%q filtered to %q, still too deep", b, out)
		}
	})
}
