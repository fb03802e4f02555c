package textproc

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Terms returns the index terms of s: its words (see [Words]) without English
// stopwords, each reduced by [Stem]. It is the analysis both the lexical index
// and the local embedder apply to tool documents and to queries, so the two
// sides always agree.
//
//	Terms("getWeatherForecast for cities") == []string{"get", "weather", "forecast", "citi"}
func Terms(s string) []string {
	words := Words(s)
	out := words[:0]
	for _, w := range words {
		if IsStopword(w) {
			continue
		}
		out = append(out, Stem(w))
	}
	return out
}

// Words splits s into lowercase words. Anything that is not a letter or a
// digit separates words, so snake_case, kebab-case, dotted names
// (math.factorial) and namespaced names (server__tool) fall apart into their
// parts. Inside a run of letters and digits, a word also ends
//   - where a lowercase letter is followed by an uppercase one (getWeather),
//   - before the last capital of an acronym followed by lowercase (HTTPServer
//     gives http, server),
//   - where letters and digits meet (sha256 gives sha, 256).
//
// Apostrophes inside a word are dropped (don't gives dont).
func Words(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	var prev rune = -1 // previous rune inside the current run, -1 at a boundary
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == '\'' || r == '’' {
			// keep "don't" as one word; elsewhere an apostrophe separates.
			if prev != -1 && unicode.IsLetter(prev) && i < len(s) {
				next, _ := utf8.DecodeRuneInString(s[i:])
				if unicode.IsLetter(next) {
					continue
				}
			}
			flush()
			prev = -1
			continue
		}
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			prev = -1
			continue
		}
		if prev != -1 {
			switch {
			case unicode.IsDigit(r) != unicode.IsDigit(prev):
				flush()
			case unicode.IsUpper(r) && unicode.IsLower(prev):
				flush()
			case unicode.IsLower(r) && unicode.IsUpper(prev):
				// "HTTPServer": the S starts the new word, so move the
				// last capital of the acronym over.
				cur := b.String()
				if n := utf8.RuneCountInString(cur); n > 1 {
					_, lsize := utf8.DecodeLastRuneInString(cur)
					head := cur[:len(cur)-lsize]
					b.Reset()
					b.WriteString(head)
					flush()
					b.WriteRune(unicode.ToLower(prev))
				}
			}
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	flush()
	return out
}

// stopwords is a short list of English function words that carry no
// meaning for choosing a tool. It is deliberately small: words such as
// "get", "list", "set", "new" or "all" are kept because tool names live on
// them.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		a an the and or but nor of to in on at by for from with without into onto
		as is are was were be been being am do does did doing done have has had
		having it its it's this that these those there here then than so such
		i me my we our us you your he him his she her they them their what which
		who whom whose when where why how can could would should shall will may
		might must please also just very too any some each either neither
		if else about over under again further once only own same not no yes
		e g eg i e ie etc`) {
		stopwords[w] = true
	}
}

// IsStopword reports whether w (a lowercase word as returned by [Words]) is on
// the short English stopword list.
func IsStopword(w string) bool { return stopwords[w] }
