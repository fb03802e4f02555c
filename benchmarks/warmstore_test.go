package benchmarks_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolsift/toolsift"
)

// BenchmarkWarmStore is toolsift.New over a store folder that already
// holds the tools' vectors and token costs (a restart: every vector and
// cost read from the store, none embedded or counted), n-gram vectors
// only.
func BenchmarkWarmStore(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			tools := synthTools(n, seed)
			dir := b.TempDir()
			open := func() *toolsift.Toolset {
				ts, err := toolsift.New(ctx, tools, &toolsift.Options{NoSemantic: true, Store: storeIn(b, dir)})
				if err != nil {
					b.Fatal(err)
				}
				return ts
			}
			open().Close() // fills the store
			b.ReportAllocs()
			for b.Loop() {
				open().Close()
			}
		})
	}
}
