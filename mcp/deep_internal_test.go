package mcp

import (
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
	f := &deepFilter{server: "s", max: 10, logger: slog.New(slog.DiscardHandler)}
	deep := deepJSONText(20)
	list := `{"jsonrpc":"2.0","id":7,"result":{"nextCursor":"[[[","tools":[{"name":"a","inputSchema":{"type":"object"}},` +
		`{"inputSchema":` + deep + `,"name":"deep\u0021"},{"name":"b"}]}}`
	for _, tc := range []struct{ name, in, want string }{
		{"shallow", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x"}]}}`, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x"}]}}`},
		{"deep tool", list, `{"jsonrpc":"2.0","id":7,"result":{"nextCursor":"[[[","tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b"}]}}`},
		{"escaped keys", strings.ReplaceAll(list, `"tools"`, `"t\u006fols"`), `{"jsonrpc":"2.0","id":7,"result":{"nextCursor":"[[[","t\u006fols":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b"}]}}`},
		{"batch", `[` + list + `,{"jsonrpc":"2.0","method":"m","params":` + deepJSONText(1200) + `}]`, `[{"jsonrpc":"2.0","id":7,"result":{"nextCursor":"[[[","tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b"}]}}]`},
		{"deep answer", `{"id":"x","jsonrpc":"2.0","result":` + deepJSONText(1000) + `}`, `{"jsonrpc":"2.0","id":"x","error":{"code":-32603,"message":"server s sent a response nested 1001 levels deep, deeper than the 1000 the MCP SDK decodes; dropped"}}`},
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
