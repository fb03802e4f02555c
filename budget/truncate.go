package budget

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Truncate returns text cut to at most maxTokens tokens (as tok counts
// them), note included. Text that fits is returned unchanged. Otherwise the
// head is kept, cut at the last line break or else word boundary in its
// final quarter (or else at a rune boundary), and a note says how much was
// cut:
//
//	first lines of the text
//	… [truncated 1234 of 5678 tokens]
//
// When maxTokens is too small even for the note, the result is the longest
// of the note, "…" or "" that fits. Each invalid UTF-8 byte in text is
// replaced by U+FFFD (as Count counts it); the result never splits a rune.
//
// Counting is slow for huge texts (about 1 to 5 MB/s), so for a
// text over 512 KiB only a prefix of max(256 KiB, 16 bytes × maxTokens) is
// tokenized: the head and the fit are still exact, but the note's numbers are
// estimated from the prefix's bytes per token and say so ("truncated about
// N of about M tokens").
func Truncate(tok *Tokenizer, text string, maxTokens int) string {
	if maxTokens <= 0 {
		return ""
	}
	if !utf8.ValidString(text) {
		// Each invalid byte becomes U+FFFD, as Count sees it.
		text = string([]rune(text))
	}
	// Counting does about 1 MB/s: for a huge text, tokenize only a
	// prefix that surely holds the head, and estimate the rest's tokens.
	body, estimated := text, false
	if len(text) > exactTruncateLimit {
		n := min(len(text), max(exactTruncateLimit/2, 16*maxTokens))
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n--
		}
		body, estimated = text[:n], n < len(text)
	}
	tokens := tok.encode(body)
	total := len(tokens)
	if estimated {
		total += int(float64(len(text)-len(body)) * float64(len(tokens)) / float64(max(len(body), 1)))
		total = max(total, maxTokens+1)
	}
	if total <= maxTokens {
		return text
	}
	note := func(cut int) string { return truncNote(cut, total, estimated) }
	// Reserve room for the note with the widest numbers it can have.
	noteMax := tok.Count(note(total))
	avail := maxTokens - noteMax
	if avail <= 0 {
		return noteOnly(tok, note(total), maxTokens)
	}
	keep := min(avail, len(tokens))
	for {
		// tokens[:keep] decodes to a byte prefix of text (the encoding is a
		// concatenation of its pieces); snap it to a rune and then a clean
		// boundary.
		end := len(tok.decode(tokens[:keep]))
		for end > 0 && end < len(body) && !utf8.RuneStart(body[end]) {
			end--
		}
		head := strings.TrimRightFunc(cleanCut(body[:end]), unicode.IsSpace)
		n := tok.Count(head)
		out := head + note(max(total-n, 1))
		if head == "" {
			out = strings.TrimPrefix(out, "\n")
		}
		if tok.Count(out) <= maxTokens {
			return out
		}
		// A head re-tokenised on its own can cost a little more than
		// the tokens it came from; give back the excess and retry.
		over := tok.Count(out) - maxTokens
		keep -= max(over, 1)
		if keep <= 0 {
			return noteOnly(tok, note(total), maxTokens)
		}
	}
}

// exactTruncateLimit is the text size (bytes) up to which Truncate counts
// every token; a var so tests can lower it.
var exactTruncateLimit = 512 << 10

func truncNote(cut, total int, estimated bool) string {
	if estimated {
		return fmt.Sprintf("\n… [truncated about %d of about %d tokens]", cut, total)
	}
	return fmt.Sprintf("\n… [truncated %d of %d tokens]", cut, total)
}

// cleanCut shortens s to its last line break, or else its last white space,
// when that keeps at least three quarters of it.
func cleanCut(s string) string {
	min := len(s) * 3 / 4
	if i := strings.LastIndexByte(s, '\n'); i >= min && i > 0 {
		return s[:i]
	}
	if i := strings.LastIndexFunc(s, unicode.IsSpace); i >= min && i > 0 {
		return s[:i]
	}
	return s
}

// noteOnly is the longest of the note, "…" and "" that fits in maxTokens.
func noteOnly(tok *Tokenizer, note string, maxTokens int) string {
	for _, s := range []string{strings.TrimPrefix(note, "\n"), "…"} {
		if tok.Count(s) <= maxTokens {
			return s
		}
	}
	return ""
}
