package encoder_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
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
			cpu := cpuSeconds()
			for b.Loop() {
				if _, err := u.Embed(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bs*b.N)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric((cpuSeconds()-cpu)*1e3/float64(bs*b.N), "cpu-ms/doc")
		})
	}
	for _, c := range []struct{ name, text string }{
		{"query/short", "search flights to Paris"},
		{"query/128pieces", long},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuSeconds()
			for b.Loop() {
				if _, err := u.Embed(ctx, []string{c.text}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu)*1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkUSECatalog embeds the tool documents of the shared MCP catalog
// (2,671 tools), when it is beside the checkout, as an index build would:
// run it with -benchtime 1x.
func BenchmarkUSECatalog(b *testing.B) {
	f, err := os.Open("../../shared/mcp/catalog.jsonl")
	if err != nil {
		b.Skipf("catalog not found: %v", err)
	}
	defer f.Close()
	var docs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var t struct {
			Server      string          `json:"server"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			b.Fatal(err)
		}
		docs = append(docs, toolindex.Document(tool.Tool{Name: t.Name, Server: t.Server, Description: t.Description, InputSchema: t.InputSchema}))
	}
	u := mustUSE(b)
	for _, c := range []struct {
		name string
		emb  toolindex.Embedder
	}{{"use", u}} {
		b.Run(c.name, func(b *testing.B) {
			cpu := cpuSeconds()
			for b.Loop() {
				// Batches of 128, as toolindex sends them.
				for i := 0; i < len(docs); i += 128 {
					if _, err := c.emb.Embed(context.Background(), docs[i:min(i+128, len(docs))]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(docs)*b.N)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/catalog")
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/catalog")
		})
	}
}
