package budget_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/budget"
)

// benchText is 256 KiB of real tool definitions (the MCP catalog), or of
// synthetic tool JSON when the catalog is absent.
func benchText(b *testing.B) string {
	data, err := os.ReadFile(catalogPath)
	if err != nil {
		var sb strings.Builder
		for _, tool := range synthPool(400, 12) {
			fmt.Fprintf(&sb, "%s %s %s\n", tool.Name, tool.Description, tool.InputSchema)
		}
		data = []byte(strings.Repeat(sb.String(), 1+(256<<10)/sb.Len()))
	}
	return string(data[:256<<10])
}

func BenchmarkCount(b *testing.B) {
	text := benchText(b)
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		b.Run(enc, func(b *testing.B) {
			tok := mustTokenizer(b, enc)
			n := tok.Count(text)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				tok.Count(text)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkSelect measures Select with warm render caches (the steady state
// of an agent: candidates change, their renderings are cached).
func BenchmarkSelect(b *testing.B) {
	tok := mustTokenizer(b, "o200k_base")
	pool := synthPool(1000, 13)
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("candidates=%d", n), func(b *testing.B) {
			cands := make([]budget.Candidate, n)
			total := 0
			for i := range cands {
				cands[i] = budget.Candidate{Tool: pool[i], Score: 1 / float64(1+i), Pinned: i == n/2}
				r, err := tok.CountTool(pool[i], budget.TierFull)
				if err != nil {
					b.Fatal(err)
				}
				total += r.Tokens
			}
			bud := budget.Budget{Tokens: total / 3, MaxTools: 64}
			sel, err := budget.Select(tok, cands, bud) // warms the cache
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := budget.Select(tok, cands, bud); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(sel.Tools)), "tools")
			b.ReportMetric(float64(sel.Tokens), "tokens")
		})
	}
}

// BenchmarkRender measures a cold render (compress + count) of one tool per
// tier, the one-time cost per tool and tier.
func BenchmarkRender(b *testing.B) {
	pool := synthPool(1, 14)
	for tier := budget.TierFull; tier < budget.NumTiers; tier++ {
		b.Run(tier.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tok := mustTokenizer(b, "o200k_base") // fresh cache
				if _, err := tok.CountTool(pool[0], tier); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// hostileTexts are texts that are one long piece or many: a run of one
// letter, letters without spaces, upper case, CJK, spaces, punctuation,
// digits.
var hostileTexts = []struct{ name, unit string }{
	{"one-letter", "a"},
	{"letters", "qwertyuiopasdfghjklzxcvbnm"},
	{"upper", "QWERTYUIOPASDFGHJKLZXCVBNM"},
	{"cjk", "日本語"},
	{"spaces", " "},
	{"punct", "!?*"},
	{"digits", "0123456789"},
}

// BenchmarkCountHostile: counting is O(n log n) in a piece's length
// (tiktoken-go's merge is O(n²): 160 KB of letters took 58 s, issue 35).
func BenchmarkCountHostile(b *testing.B) {
	tok := mustTokenizer(b, "o200k_base")
	for _, h := range hostileTexts {
		for _, size := range []int{16 << 10, 160 << 10, 1 << 20} {
			text := strings.Repeat(h.unit, size/len(h.unit))
			b.Run(fmt.Sprintf("%s/%dKiB", h.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					tok.Count(text)
				}
			})
		}
	}
}
