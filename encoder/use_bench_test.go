package encoder_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/encoder"
)

// BenchmarkUSE measures Embed: documents per second for batches of tool
// documents (the fixture's, most of them over the 128-piece limit), and the
// latency of one short query and of one text of 128 pieces.
func BenchmarkUSE(b *testing.B) {
	ref := loadUSEReference(b)
	u := mustUSE(b)
	var docs []string
	for _, r := range ref.Texts[:11] { // the tool documents
		docs = append(docs, r.Text)
	}
	long := strings.Repeat("retrieve the complete order history for a customer ", 30)
	if n := len(encoder.USEPieceIDs(u, long)); n < 128 {
		b.Fatalf("long text has %d pieces", n)
	}
	ctx := context.Background()
	for _, bs := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("docs/batch=%d", bs), func(b *testing.B) {
			batch := make([]string, bs)
			for i := range batch {
				batch[i] = docs[i%len(docs)]
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := u.Embed(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bs*b.N)/b.Elapsed().Seconds(), "docs/s")
		})
	}
	for _, c := range []struct{ name, text string }{
		{"query/short", "search flights to Paris"},
		{"query/128pieces", long},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := u.Embed(ctx, []string{c.text}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUSEStatic measures the static tier on the same texts.
func BenchmarkUSEStatic(b *testing.B) {
	ref := loadUSEReference(b)
	s, err := encoder.NewUSEStatic()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct{ name, text string }{
		{"doc", ref.Texts[0].Text},
		{"query/short", "search flights to Paris"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Embed(ctx, []string{c.text}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
