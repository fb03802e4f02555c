package budget_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolsift/toolsift/budget"
)

var noteRE = regexp.MustCompile(`… \[truncated (\d+) of (\d+) tokens\]$`)

// checkTruncate checks the contract of Truncate for one input.
func checkTruncate(t *testing.T, tok *budget.Tokenizer, text string, max int) string {
	t.Helper()
	got := budget.Truncate(tok, text, max)
	total := tok.Count(text)
	if !utf8.ValidString(got) {
		t.Fatalf("Truncate(%d) returned invalid UTF-8: %q", max, got)
	}
	if n := tok.Count(got); n > max && max >= 0 {
		t.Fatalf("Truncate(%d) = %d tokens: %q", max, n, got)
	}
	if total <= max {
		if got != string([]rune(text)) {
			t.Fatalf("text that fits was changed: %q -> %q", text, got)
		}
		return got
	}
	m := noteRE.FindStringSubmatch(got)
	if m == nil {
		if got != "" && got != "…" {
			t.Fatalf("Truncate(%d) of %d tokens has no note: %q", max, total, got)
		}
		return got
	}
	if all, _ := strconv.Atoi(m[2]); all != total {
		t.Errorf("note says %s tokens in all, text has %d", m[2], total)
	}
	head := strings.TrimSuffix(strings.TrimSuffix(got, m[0]), "\n")
	if !strings.HasPrefix(string([]rune(text)), head) {
		t.Fatalf("head is not a prefix of the text: %q", head)
	}
	if cut, _ := strconv.Atoi(m[1]); cut != total-tok.Count(head) {
		t.Errorf("note says %d cut, head has %d of %d tokens", cut, tok.Count(head), total)
	}
	return got
}

func TestTruncate(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	lines := ""
	for i := range 50 {
		lines += fmt.Sprintf("line %d: some output from a tool\n", i)
	}
	tests := []struct {
		name string
		text string
		max  int
		want string
	}{
		{"fits", "hello world", 2, "hello world"},
		{"zero", "hello world", 0, ""},
		{"cut at a line", lines, 60, "line 0: some output from a tool\nline 1: some output from a tool\nline 2: some output from a tool\nline 3: some output from a tool\n… [truncated 461 of 500 tokens]"},
		{"cut at a word", strings.Repeat("alpha beta gamma delta ", 40), 30, "alpha beta gamma delta alpha beta gamma delta alpha beta gamma delta alpha beta gamma delta alpha\n… [truncated 144 of 161 tokens]"},
		{"room for the note only", strings.Repeat("word ", 100), 11, "… [truncated 101 of 101 tokens]"},
		{"room for less than the note", strings.Repeat("word ", 100), 3, "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkTruncate(t, tok, tt.text, tt.max)
			if got != tt.want {
				t.Errorf("Truncate(%d) =\n%q\nwant\n%q", tt.max, got, tt.want)
			}
		})
	}
}

// TestTruncateRandom cuts seeded random texts, rich in multi-byte runes
// (CJK, emoji with joiners, combining marks) and invalid bytes, at every
// kind of limit.
func TestTruncateRandom(t *testing.T) {
	pieces := []string{"お誕生日", "おめでとう", "👩‍👩‍👧", "🇫🇷", "é", "e\u0301", "naïve", " ", "\n", "\t", "word", "Ünïcödé",
		"数据", "😀😀", "\xff", "\xe3\x81", "{\"k\":", "12345", ".", "—", "ﷺ"}
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		tok := mustTokenizer(t, enc)
		r := rand.New(rand.NewPCG(10, 11))
		cases := 300
		if raceEnabled || testing.Short() {
			cases = 60
		}
		for range cases {
			var b strings.Builder
			for range r.IntN(120) {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			text := b.String()
			max := r.IntN(tok.Count(text) + 5)
			checkTruncate(t, tok, text, max)
		}
	}
}

// TestTruncateHuge: above the exact limit only a prefix is tokenized; the
// result still fits and says the numbers are estimates.
func TestTruncateHuge(t *testing.T) {
	restore := budget.SetExactTruncateLimit(4 << 10)
	defer restore()
	tok := mustTokenizer(t, "o200k_base")
	var b strings.Builder
	for i := 0; b.Len() < 64<<10; i++ {
		fmt.Fprintf(&b, "record %d: お誕生日 status=ok value=%d\n", i, i*7)
	}
	text := b.String()
	exact := tok.Count(text)
	for _, max := range []int{5, 20, 100, 1000} {
		got := budget.Truncate(tok, text, max)
		if n := tok.Count(got); n > max || !utf8.ValidString(got) {
			t.Fatalf("Truncate(%d) = %d tokens, valid UTF-8 %v", max, n, utf8.ValidString(got))
		}
		m := regexp.MustCompile(`… \[truncated about (\d+) of about (\d+) tokens\]$`).FindStringSubmatch(got)
		if m == nil {
			if max >= 20 {
				t.Fatalf("Truncate(%d) has no estimated note: %q", max, got)
			}
			continue
		}
		est, _ := strconv.Atoi(m[2])
		if est < exact*9/10 || est > exact*11/10 {
			t.Errorf("estimated total %d, exact %d: more than 10%% off", est, exact)
		}
		if head := strings.TrimSuffix(got, "\n"+m[0]); !strings.HasPrefix(text, head) || (max >= 100 && tok.Count(head) < max/2) {
			t.Errorf("Truncate(%d): head of %d tokens is not a well-used prefix", max, tok.Count(head))
		}
	}
}
