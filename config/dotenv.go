package config

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

var dotenvKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// parseDotenv reads a dotenv file: KEY=VALUE lines, blank lines, # comments,
// an optional "export " prefix, values in single quotes (literal) or double
// quotes (\n, \r, \t, \", \\ and \$ escapes; both may span lines), and
// unquoted values ending at " #". Variables are not expanded. A later key
// wins. Errors name the line but never a value.
func parseDotenv(data []byte) (map[string]string, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	vars := map[string]string{}
	line := 1
	for len(text) > 0 {
		start := line
		var cur string
		cur, text, _ = strings.Cut(text, "\n")
		line++
		s := strings.TrimSpace(cur)
		if s == "" || s[0] == '#' {
			continue
		}
		if rest, ok := strings.CutPrefix(s, "export"); ok && len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
			s = strings.TrimSpace(rest)
		}
		key, val, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || !dotenvKey.MatchString(key) {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", start)
		}
		val = strings.TrimLeft(val, " \t")
		if val != "" && (val[0] == '"' || val[0] == '\'') {
			q := val[0]
			// The value may go on over the following lines.
			body := val[1:]
			for {
				end := closingQuote(body, q)
				if end >= 0 {
					after := strings.TrimSpace(body[end+1:])
					if after != "" && after[0] != '#' {
						return nil, fmt.Errorf("line %d: unexpected text after the closing quote", line-1)
					}
					body = body[:end]
					break
				}
				if text == "" {
					return nil, fmt.Errorf("line %d: unterminated quoted value", start)
				}
				cur, text, _ = strings.Cut(text, "\n")
				line++
				body += "\n" + cur
			}
			if q == '"' {
				body = unescapeDotenv(body)
			}
			vars[key] = body
			continue
		}
		if i := strings.Index(val, " #"); i >= 0 {
			val = val[:i]
		}
		if i := strings.Index(val, "\t#"); i >= 0 {
			val = val[:i]
		}
		vars[key] = strings.TrimSpace(val)
	}
	return vars, nil
}

// closingQuote returns the index of the quote q that closes s, or -1; in
// double quotes a backslash escapes the next byte.
func closingQuote(s string, q byte) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q == '"':
			i++
		case s[i] == q:
			return i
		}
	}
	return -1
}

func unescapeDotenv(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case '"', '\\', '$', '\'':
			b.WriteByte(s[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
