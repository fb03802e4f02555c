package termsafe_test

import (
	"testing"

	"github.com/toolsift/toolsift/internal/termsafe"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, ünïcödé, 日本語\n\tindented", "plain text, ünïcödé, 日本語\n\tindented"},
		{"\x1b[2Jcleared", `\x1b[2Jcleared`},
		{"\x1b]0;pwned title\x07", `\x1b]0;pwned title\x07`},
		{"\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x1b\\", `\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x1b\`},
		{"ok\rEVIL", `ok\rEVIL`},
		{"back\bspace\x7f", `back\x08space\x7f`},
		{"c1 \u009b2J csi", `c1 \u009b2J csi`},
		{"file\u202egnp.exe", `file\u202egnp.exe`},
		{"bad \xff byte", `bad \xff byte`},
		{"", ""},
	} {
		if got := termsafe.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("\x1b[2J\x1b]0;x\x07\x1b]52;c;eA==\x07")
	f.Fuzz(func(t *testing.T, s string) {
		out := termsafe.String(s)
		for i := 0; i < len(out); i++ {
			if c := out[i]; (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				t.Fatalf("String(%q) = %q keeps control byte %#x", s, out, c)
			}
		}
	})
}
