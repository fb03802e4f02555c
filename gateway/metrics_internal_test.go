package gateway

import (
	"context"
	"testing"
	"time"
)

// BenchmarkCallMetricsHooks and BenchmarkSearchMetricsHooks: what a call's
// and a search's counting costs alone, without Metrics (a nil check) and
// with them; the requests' middleware adds one counter more.
func BenchmarkCallMetricsHooks(b *testing.B) {
	for name, m := range map[string]*Metrics{"off": nil, "on": NewMetrics(0)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.called(context.Background(), "math", "ok", 3*time.Millisecond)
			}
		})
	}
}

func BenchmarkSearchMetricsHooks(b *testing.B) {
	for name, m := range map[string]*Metrics{"off": nil, "on": NewMetrics(0)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.searched(3*time.Millisecond, 5, nil)
			}
		})
	}
}
