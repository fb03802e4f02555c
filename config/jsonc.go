package config

import "fmt"

// jsoncError is a problem found by stripJSONC, at a byte offset.
type jsoncError struct {
	off int
	msg string
}

func (e *jsoncError) Error() string { return e.msg }

// stripJSONC turns JSONC (JSON with // and /* */ comments and trailing
// commas, as VS Code writes it) into JSON by overwriting comments and
// trailing commas with spaces. The result has the same length as data and
// keeps every newline, so byte offsets, lines and columns found in it hold
// for data. Strings pass through untouched, escapes included. A comma is
// trailing when only whitespace and comments separate it from a closing
// bracket or brace and it follows a value; "[,]" and "[1,,]" stay invalid.
// The only error is an unterminated block comment.
func stripJSONC(data []byte) ([]byte, error) {
	out := make([]byte, len(data))
	copy(out, data)
	// last and before are the offsets of the last two significant bytes
	// (outside comments and whitespace), -1 if none.
	last, before := -1, -1
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
	}
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case c == '"':
			start := i
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
			// An unterminated string is left for the JSON parser to report.
			last, before = start, last
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			end := i
			for end < len(out) && out[end] != '\n' && out[end] != '\r' {
				end++
			}
			blank(i, end)
			i = end - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := -1
			for j := i + 2; j+1 < len(out); j++ {
				if out[j] == '*' && out[j+1] == '/' {
					end = j + 2
					break
				}
			}
			if end < 0 {
				return nil, &jsoncError{off: i, msg: "unterminated /* comment"}
			}
			blank(i, end)
			i = end - 1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case (c == ']' || c == '}') && last >= 0 && out[last] == ',' && before >= 0 && !opensOrSeparates(out[before]):
			out[last] = ' '
			last = i // before stays: the comma is gone
		default:
			last, before = i, last
		}
	}
	return out, nil
}

// opensOrSeparates reports whether a comma after c follows no value.
func opensOrSeparates(c byte) bool { return c == '[' || c == '{' || c == ',' || c == ':' }

// lineCol turns a byte offset in text into a 1-based line and column; the
// column counts characters (UTF-8 sequences), not bytes.
func lineCol(text []byte, off int) (line, col int) {
	off = min(max(off, 0), len(text))
	line, col = 1, 1
	for i := 0; i < off; i++ {
		switch {
		case text[i] == '\n':
			line, col = line+1, 1
		case text[i] == '\r' && (i+1 >= len(text) || text[i+1] != '\n'):
			line, col = line+1, 1 // a lone CR ends a line too
		case text[i]&0xC0 != 0x80: // not a UTF-8 continuation byte
			col++
		}
	}
	return line, col
}

// position formats an offset in text as file:line:col.
func position(file string, text []byte, off int) string {
	line, col := lineCol(text, off)
	return fmt.Sprintf("%s:%d:%d", file, line, col)
}
