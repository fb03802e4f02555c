// Package termsafe makes text from MCP servers (tool output, descriptions,
// error messages, stderr) safe to print on a terminal: control characters
// other than newline and tab are shown escaped instead of acting, so a
// server cannot clear the screen (ESC[2J), set the window title (OSC 0),
// write the clipboard (OSC 52), move the cursor or rewrite a line (CR,
// BS), or reorder what is shown (bidirectional overrides).
package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// String returns s with every character that a terminal would act on
// escaped, Go-style: C0 controls but \n and \t (ESC is \x1b, CR \r), DEL,
// C1 controls (\u009b), the bidirectional embeddings, overrides and
// isolates (\u202e), and invalid UTF-8 bytes (\xff). Other text, newlines
// and tabs are unchanged. It returns s itself when nothing needs escaping.
func String(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unsafe(r, size):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r, size):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafe(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
