package gateway

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/store/postgres"
)

// BenchmarkLimited: what a rate limit costs a call (proxy.limited, one
// limit that never refuses), with the buckets in this process and in
// PostgreSQL (a throwaway cluster on a unix socket, fsync off, as the
// tests run it): one statement a call, a round trip to the server.
func BenchmarkLimited(b *testing.B) {
	pol, err := newPolicy(&config.Policy{Rules: []config.PolicyRule{{Teams: []string{"a"}, Allow: []string{"*"},
		Limits: []config.PolicyLimit{{Calls: 1 << 30, Per: time.Hour}}}}}, []string{"math"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := authn.WithIdentity(context.Background(), authn.Identity{User: "alice", Teams: []string{"a"}})
	for _, kind := range []string{"memory", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			p := &proxy{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			p.policy.Store(pol)
			if kind == "postgres" {
				st, err := postgres.Open(context.Background(), pgtest.Start(b), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				p.limits.rl = st
			}
			b.ReportAllocs()
			for b.Loop() {
				if r := p.limited(ctx, "math__add"); r != nil {
					b.Fatalf("refused: %+v", r)
				}
			}
		})
	}
}
