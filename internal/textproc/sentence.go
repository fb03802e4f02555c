package textproc

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file owns the sentence rules. The first sentence of a tool's
// description is what budget sends at its compressed tiers and what
// search_tools and the agent's close matches describe a tool by;
// SentenceEnd is where retrieval splits an agent's task into searches.
// The two rules differ on purpose, and each one's token counts and
// rankings are measured as they are: a description ends at "monday.com."
// or "(e.g." (a cut that is too early costs a few words), while a task's
// "U.S." or "1." (a numbered list) must not split it.

// descriptionAbbreviations end in a period without ending a description's
// first sentence (compared with the period, lowercased).
var descriptionAbbreviations = map[string]bool{
	"e.g.": true, "i.e.": true, "etc.": true, "vs.": true, "approx.": true,
	"incl.": true, "eg.": true, "ie.": true, "mr.": true, "ms.": true,
	"dr.": true, "no.": true, "cf.": true, "resp.": true,
}

// taskAbbreviations are common English abbreviations written with a
// single full stop (compared without it, lowercased).
var taskAbbreviations = map[string]bool{
	"dr": true, "mr": true, "mrs": true, "ms": true, "prof": true, "st": true,
	"vs": true, "etc": true, "no": true, "fig": true, "approx": true, "inc": true,
	"ltd": true, "jr": true, "sr": true, "co": true, "eg": true, "ie": true,
}

// SentenceEnd reports whether a full stop after s ends a sentence of a
// task: not when the last word of s is an abbreviation ("e.g", "U.S",
// "Dr", "vs") or a number ("1" in a numbered list).
func SentenceEnd(s string) bool {
	w := s[strings.LastIndexAny(s, " \t\n(")+1:]
	if w == "" || strings.Contains(w, ".") || taskAbbreviations[strings.ToLower(w)] {
		return false
	}
	for _, r := range w {
		if r < '0' || r > '9' {
			return true
		}
	}
	return false
}

// FirstSentence returns the first sentence of s on one line: up to the
// first '.', '!' or '?' followed by white space (a full stop after "e.g."
// and the like does not count), or the first line break, whichever comes
// first; then at most max runes, cut at a word boundary with "…".
func FirstSentence(s string, max int) string {
	s = strings.TrimSpace(s)
	end := len(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		end = i
	}
	for i := 0; i < end; {
		r, size := utf8.DecodeRuneInString(s[i:])
		next := i + size
		switch r {
		case '.', '!', '?':
			if next >= end || isSpaceAt(s, next) {
				if r != '.' || !descriptionAbbreviations[strings.ToLower(lastWord(s[:next]))] {
					end = next
				}
			}
		case '。', '！', '？':
			end = next
		}
		i = next
	}
	one := strings.TrimSpace(s[:end])
	// An empty first line ("\n\nDoes X") falls back to the next text.
	if one == "" && end < len(s) {
		return FirstSentence(s[end:], max)
	}
	return capRunes(one, max)
}

func isSpaceAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsSpace(r)
}

func lastWord(s string) string {
	if i := strings.LastIndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[i+1:]
	}
	return s
}

// capRunes cuts s to at most max runes (including the "…" it appends), at a
// word boundary when there is one in the last third.
func capRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	cut, n := 0, 0
	for i := range s {
		if n == max-1 {
			cut = i
			break
		}
		n++
	}
	head := s[:cut]
	if i := strings.LastIndexFunc(head, unicode.IsSpace); i > len(head)*2/3 {
		head = head[:i]
	}
	return strings.TrimRightFunc(head, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }) + "…"
}
