// Package usagekey is the one rule for the store keys of the usage memory
// a Toolset keeps: one value per scope under Prefix, as usage.Memory.Marshal
// writes it. The root writes them; toolsift usage lists and forgets them.
package usagekey

import (
	"fmt"
	"strings"
)

// Prefix starts the store keys of the usage memory: one value per scope
// (Key).
const Prefix = "usage/"

// Key returns the store key that keeps the usage memory's scope
// (Prefix and the scope, its bytes other than ASCII letters, digits
// and "-_@+:" written "=XX"; "=" for the scope "").
func Key(scope string) string {
	if scope == "" {
		return Prefix + "="
	}
	var b strings.Builder
	b.WriteString(Prefix)
	for i := 0; i < len(scope); i++ {
		c := scope[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-_@+:", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "=%02X", c)
		}
	}
	return b.String()
}

// Scope returns the scope whose store key is key (Key), and false for a
// key that Key does not make.
func Scope(key string) (string, bool) {
	s, ok := strings.CutPrefix(key, Prefix)
	if !ok || s == "" {
		return "", false
	}
	if s == "=" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		var c byte
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", false
		}
		_, _ = fmt.Sscanf(s[i+1:i+3], "%02X", &c)
		b.WriteByte(c)
		i += 2
	}
	scope := b.String()
	return scope, Key(scope) == key
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }
