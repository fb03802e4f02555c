package budget_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/toolsift/toolsift/budget"
)

// reference returns tiktoken-go's own encoder for an encoding: what budget's
// merge must agree with token for token.
var reference = sync.OnceValue(func() map[string]*tiktoken.Tiktoken {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	m := map[string]*tiktoken.Tiktoken{}
	for _, enc := range []string{"o200k_base", "cl100k_base", "p50k_base"} {
		tk, err := tiktoken.GetEncoding(enc)
		if err != nil {
			panic(err)
		}
		m[enc] = tk
	}
	return m
})

// bpeTexts are the texts the merge is checked on: real text (this
// repository's docs and Go sources, the first real of them), random text
// over alphabets that make long pieces (letters without spaces, one
// repeated letter, digits, spaces, punctuation, CJK, combining marks,
// invalid UTF-8), and their mixtures.
func bpeTexts(t *testing.T) (texts []string, real int) {
	for _, glob := range []string{"../docs/*.md", "*.go", "../agent/*.go"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, string(b))
		}
	}
	if len(texts) < 10 {
		t.Fatalf("only %d real texts found", len(texts))
	}
	real = len(texts)
	alphabets := []string{
		"a", "ab", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZabc", "aA'",
		"0123456789", " \t\n", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "日本語のテキスト",
		"e\u0301a\u0300", "ǅǈǋ", "\xff\xfe\x80a", "The quick brown fox's jumps ", "xyz xyzzy   \n\n",
	}
	rng := rand.New(rand.NewPCG(35, 1))
	for range 400 {
		var sb strings.Builder
		n := rng.IntN(3000)
		for range 1 + rng.IntN(4) {
			a := []rune(alphabets[rng.IntN(len(alphabets))])
			for range n / 4 {
				sb.WriteRune(a[rng.IntN(len(a))])
			}
		}
		texts = append(texts, sb.String())
	}
	for _, s := range []string{"a", "A", "ab", "e\u0301", " ", "1", "!", "\xff", "日"} {
		texts = append(texts, strings.Repeat(s, 5000))
	}
	return texts, real
}

// raceRealText is how much of each real text TestBPEMatchesTiktoken
// checks under -race.
const raceRealText = 4 << 10

// cutRunes returns the longest prefix of s of at most n bytes that does
// not end inside a rune.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// TestBPEMatchesTiktoken: budget's O(n log n) merge gives, on every text,
// the tokens tiktoken-go's quadratic merge gives, through both of its paths
// (tiktoken's loop for short pieces, the heap for long ones) and with every
// piece sent through the heap.
func TestBPEMatchesTiktoken(t *testing.T) {
	texts, real := bpeTexts(t)
	if raceEnabled {
		// -race finds nothing in this one goroutine's arithmetic and makes
		// it ten times slower: check the first eighth of the texts (the
		// real ones, then random ones), each real one cut to its first
		// raceRealText bytes. Without -race every text is checked whole
		// (.ci/run runs it so, docs/development.md).
		texts = texts[:len(texts)/8]
		for i := range min(real, len(texts)) {
			texts[i] = cutRunes(texts[i], raceRealText)
		}
	}
	for enc, ref := range reference() {
		tok := mustTokenizer(t, enc)
		wants := make([][]int, len(texts)) // tiktoken-go's tokens, the same for both paths
		for i, s := range texts {
			wants[i] = ref.EncodeOrdinary(s)
		}
		for _, small := range []int{64, 0} {
			restore := budget.SetSmallPiece(small)
			for i, s := range texts {
				want := wants[i]
				// cmp.Diff only to say how they differ: on texts of
				// 100k tokens it costs more than the merge.
				if got := tok.Encode(s); !slices.Equal(want, got) {
					t.Fatalf("%s, smallPiece %d, text %d (%.60q…): tokens differ from tiktoken-go (-want +got):\n%s", enc, small, i, s, cmp.Diff(want, got))
				}
				if n := tok.Count(s); n != len(want) {
					t.Fatalf("%s, text %d: Count = %d, want %d", enc, i, n, len(want))
				}
			}
			restore()
		}
	}
}

// FuzzBPE holds the merge to tiktoken-go's on any input.
func FuzzBPE(f *testing.F) {
	for _, s := range []string{"hello world", strings.Repeat("a", 300), "aAaA'll 123 \n\n  x", "\xff\xfe日本"} {
		f.Add(s)
	}
	tok := mustTokenizer(f, "o200k_base")
	ref := reference()["o200k_base"]
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		restore := budget.SetSmallPiece(0)
		defer restore()
		if diff := cmp.Diff(ref.EncodeOrdinary(s), tok.Encode(s), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("tokens of %q differ from tiktoken-go (-want +got):\n%s", s, diff)
		}
	})
}

// TestCountHugePiece counts 1 MiB pieces of each hostile shape (a minute per
// 160 KB and 40 minutes per MiB with tiktoken-go's merge, so this test
// timed out before): counts are consistent with the same text cut where
// the merge result repeats (one letter: o200k_base merges "aaaaaaaa").
func TestCountHugePiece(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	n := 1 << 20
	if raceEnabled {
		n = 1 << 18 // still minutes with a quadratic merge
	}
	one := tok.Count(strings.Repeat("a", 8))
	if one != 1 {
		t.Fatalf("Count(8×a) = %d, want 1", one)
	}
	if got := tok.Count(strings.Repeat("a", n)); got != n/8 {
		t.Errorf("Count(1 MiB of a) = %d, want %d", got, n/8)
	}
	for _, h := range []string{"qwertyuiopasdfghjklzxcvbnm", "QWERTYUIOPASDFGHJKLZXCVBNM", "日本語", "!?*", " "} {
		s := strings.Repeat(h, n/len(h))
		if got := tok.Count(s); got <= 0 || got > len(s) {
			t.Errorf("Count(1 MiB of %q) = %d", h, got)
		}
	}
}
