package encoder_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// useKernelFlag forces a matrix kernel in the benchmarks, to compare them:
// go test -bench USE ./encoder/ -args -usekernel avx2 (see USEKernels).
var useKernelFlag = flag.String("usekernel", "", "matrix kernel for the USE benchmarks (go, avx2, avx512, avx512vnni: see USEKernels); default the fastest")

// useWorkersFlag sets USEOptions.Workers in BenchmarkUSE (0: the
// default), e.g. -useworkers 1 to measure one goroutine's cost.
var useWorkersFlag = flag.Int("useworkers", 0, "USEOptions.Workers for BenchmarkUSE (0: GOMAXPROCS)")

// setBenchKernel applies -usekernel for the rest of the benchmark.
func setBenchKernel(b *testing.B) {
	if *useKernelFlag == "" {
		return
	}
	restore, err := encoder.SetUSEKernel(*useKernelFlag)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(restore)
}

// cutToPieces returns the longest prefix of text, cut at a space or a line
// break, of at most n pieces, and its number of pieces.
func cutToPieces(u *encoder.USE, text string, n int) (string, int) {
	best, bestN := "", 0
	for i, c := range text {
		if c != ' ' && c != '\n' {
			continue
		}
		p := len(encoder.USEPieceIDs(u, text[:i]))
		if p > n {
			break
		}
		best, bestN = text[:i], p
	}
	return best, bestN
}

// BenchmarkUSE measures Embed: CPU time and documents per second for tool
// documents of about 32, 64 and 128 pieces (the fixture's, cut at a word;
// "docs" are the fixture's whole, most of them over the 128-piece limit),
// one at a time and in batches of 16, and the latency of a short query
// and of one text of 128 pieces.
func BenchmarkUSE(b *testing.B) {
	setBenchKernel(b)
	ref := loadUSEReference(b)
	u := mustUSE(b)
	if *useWorkersFlag != 0 {
		var err error
		if u, err = encoder.NewUSE(&encoder.USEOptions{Workers: *useWorkersFlag}); err != nil {
			b.Fatal(err)
		}
	}
	var docs []string
	for _, r := range ref.Texts[:useFixtureDocs] {
		docs = append(docs, r.Text)
	}
	long := strings.Repeat("retrieve the complete order history for a customer ", 30)
	if n := len(encoder.USEPieceIDs(u, long)); n < 128 {
		b.Fatalf("long text has %d pieces", n)
	}
	ctx := context.Background()
	runDocs := func(name string, docs []string, pieces int) {
		for _, bs := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/batch=%d", name, bs), func(b *testing.B) {
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
				if pieces > 0 {
					b.ReportMetric(float64(pieces), "pieces/doc")
				}
			})
		}
	}
	runDocs("docs", docs, 0)
	for _, n := range []int{32, 64, 128} {
		var cut []string
		total := 0
		for _, d := range docs {
			if len(encoder.USEPieceIDs(u, d)) < n {
				continue
			}
			c, p := cutToPieces(u, d, n)
			cut = append(cut, c)
			total += p
		}
		runDocs(fmt.Sprintf("pieces=%d", n), cut, total/len(cut))
	}
	step, n := cutToPieces(u, "I need to find the cheapest direct flight from Boston to Paris next Friday, then book a hotel near the station for three nights and add both to my calendar ", 25)
	if n != 25 {
		b.Fatalf("step text has %d pieces, want 25", n)
	}
	// query/… is Embed, queries/… EmbedQueries (the int16 path with the
	// assembly kernels).
	for _, c := range []struct{ name, text string }{
		{"short", "search flights to Paris"},
		{"25pieces", step},
		{"128pieces", long},
	} {
		for _, m := range []struct {
			name  string
			embed func(context.Context, []string) ([][]float32, error)
		}{{"query", u.Embed}, {"queries", u.EmbedQueries}} {
			b.Run(m.name+"/"+c.name, func(b *testing.B) {
				// Outside the measure: EmbedQueries's first call
				// converts the weights to int16, once per process.
				if _, err := m.embed(ctx, []string{c.text}); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu := cpuSeconds()
				// The fastest call too: on a machine shared with other
				// work, the one least disturbed by it.
				fastest := time.Duration(math.MaxInt64)
				for b.Loop() {
					start := time.Now()
					if _, err := m.embed(ctx, []string{c.text}); err != nil {
						b.Fatal(err)
					}
					fastest = min(fastest, time.Since(start))
				}
				b.ReportMetric((cpuSeconds()-cpu)*1e3/float64(b.N), "cpu-ms/op")
				b.ReportMetric(fastest.Seconds()*1e3, "min-ms/op")
			})
		}
	}
	// A server's load: 8 goroutines embedding a query each at once, as
	// toolsift serve's searches do; CPU per query.
	b.Run("queries-concurrent=8/25pieces", func(b *testing.B) {
		if _, err := u.EmbedQueries(ctx, []string{step}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu := cpuSeconds()
		b.SetParallelism(4) // GOMAXPROCS 2: 8 goroutines
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := u.EmbedQueries(ctx, []string{step}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric((cpuSeconds()-cpu)*1e3/float64(b.N), "cpu-ms/op")
	})
}

// BenchmarkUSECatalog embeds the tool documents of the shared MCP catalog
// (2,671 tools), when it is beside the checkout, as an index build would:
// run it with -benchtime 1x.
func BenchmarkUSECatalog(b *testing.B) {
	setBenchKernel(b)
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
