package gateway

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/authn"
)

// BenchmarkSearchPolicy is a search_tools answer over 73 in-process
// servers of 30 tools (the size of the 73-server catalog) without a
// policy, with one that lets the caller see every server, and with one
// that lets it see 11 of them (s1, s10…s19: the others' tools are
// skipped, and the search asks for more until it has k); scope is what a
// request pays to know its caller's scope (cached per identity and index
// generation).
func BenchmarkSearchPolicy(b *testing.B) {
	ts, hub := catalog73(b, func(s, i int) string {
		return fmt.Sprintf("Tool %d of server %d: reads and writes record %d.", i, s, i*s)
	})
	ctx := authn.WithIdentity(context.Background(), authn.Identity{User: "bob", Teams: []string{"b"}})
	for _, c := range []struct {
		name string
		pol  *config.Policy
	}{
		{"none", nil},
		{"all", &config.Policy{Rules: []config.PolicyRule{{Teams: []string{"b"}, Allow: []string{"*"}}}}},
		{"11of73", &config.Policy{Rules: []config.PolicyRule{{Teams: []string{"b"}, Allow: []string{"s1*"}}}}},
	} {
		p, err := newProxy(ts, hub, &proxyOptions{Policy: c.pol})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("search/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := p.searchAnswer(ctx, "read record 42 of server 40", 5); err != nil {
					b.Fatal(err)
				}
			}
		})
		if c.pol != nil {
			b.Run("scope/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.access(ctx)
				}
			})
		}
	}
}
