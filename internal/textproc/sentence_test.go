package textproc_test

import (
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/textproc"
)

func TestFirstSentence(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"Send an email.", 80, "Send an email."},
		{"Send an email.  It supports\nattachments. And more.", 80, "Send an email."},
		{"Version 1.2 of the tool", 80, "Version 1.2 of the tool"},
		{"Search issues, e.g. by label. Returns a page.", 80, "Search issues, e.g. by label."},
		{"Ask Dr. Who! Then stop.", 80, "Ask Dr. Who!"},
		{"Lists pages on monday.com. Use a cursor.", 80, "Lists pages on monday.com."},
		{"First line\nsecond line.", 80, "First line"},
		{"\n\nDoes X. More.", 80, "Does X."},
		{"天気を取得します。詳細", 80, "天気を取得します。"},
		{"a very long description without any full stop that goes on", 20, "a very long descrip…"},
		{"a description without a full stop that goes on and on", 40, "a description without a full stop that…"},
		{strings.Repeat("x", 30), 10, strings.Repeat("x", 9) + "…"},
		{"", 10, ""},
	}
	for _, tt := range tests {
		if got := textproc.FirstSentence(tt.in, tt.max); got != tt.want {
			t.Errorf("FirstSentence(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestSentenceEnd(t *testing.T) {
	tests := []struct {
		before string
		want   bool
	}{
		{"Book a flight", true},
		{"Fly to the U.S", false},
		{"Compare A vs", false},
		{"Ask Dr", false},
		{"Step 1", false},
		{"(e.g", false},
		{"Call me at 5 pm", true},
		{"", false},
	}
	for _, tt := range tests {
		if got := textproc.SentenceEnd(tt.before); got != tt.want {
			t.Errorf("SentenceEnd(%q) = %v, want %v", tt.before, got, tt.want)
		}
	}
}
