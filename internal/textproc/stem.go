package textproc

import "strings"

// Stem reduces an English word to a light stem with step 1 of the Porter
// stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980): plurals
// (-s, -es, -ies), -ed and -ing with the clean-up of the stem they leave
// (calculated, calculating, calculates all give calculate), and a final y
// after a consonant-containing stem (city, cities give citi). The later
// Porter steps (-ation, -ize, -ness ...) are left out on purpose: they
// conflate words a tool catalog keeps apart (general, generate; organ,
// organize), and the local embedder's character n-grams already relate
// such forms softly.
//
// [Words] shorter than three letters and words that contain anything but
// a-z (digits, non-ASCII letters) are returned unchanged.
func Stem(w string) string {
	if len(w) < 3 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	w = step1a(w)
	w = step1b(w)
	w = step1c(w)
	return w
}

// isCons reports whether w[i] is a consonant in Porter's sense: not a vowel,
// and y only when it follows a vowel or starts the word.
func isCons(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !isCons(w, i-1)
	}
	return true
}

// measure is Porter's m: the number of vowel-consonant sequences in w.
func measure(w string) int {
	m, i, n := 0, 0, len(w)
	for i < n && isCons(w, i) {
		i++
	}
	for i < n {
		for i < n && !isCons(w, i) {
			i++
		}
		if i >= n {
			break
		}
		for i < n && isCons(w, i) {
			i++
		}
		m++
	}
	return m
}

func hasVowel(w string) bool {
	for i := range len(w) {
		if !isCons(w, i) {
			return true
		}
	}
	return false
}

// doubleCons reports whether w ends with a double consonant.
func doubleCons(w string) bool {
	n := len(w)
	return n >= 2 && w[n-1] == w[n-2] && isCons(w, n-1)
}

// cvc reports whether w ends consonant-vowel-consonant where the last
// consonant is not w, x or y (hop, not hoop or snow).
func cvc(w string) bool {
	n := len(w)
	if n < 3 || !isCons(w, n-1) || isCons(w, n-2) || !isCons(w, n-3) {
		return false
	}
	switch w[n-1] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func step1a(w string) string {
	switch {
	case strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ies"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss"):
		return w
	case strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is"):
		// status, analysis, basis: not plurals. (A small, common
		// deviation from Porter, which would strip the s.)
		return w
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}

func step1b(w string) string {
	if strings.HasSuffix(w, "eed") {
		if measure(w[:len(w)-3]) > 0 {
			return w[:len(w)-1]
		}
		return w
	}
	var stem string
	switch {
	case strings.HasSuffix(w, "ed"):
		stem = w[:len(w)-2]
	case strings.HasSuffix(w, "ing"):
		stem = w[:len(w)-3]
	default:
		return w
	}
	if !hasVowel(stem) {
		return w
	}
	switch {
	case strings.HasSuffix(stem, "at"), strings.HasSuffix(stem, "bl"), strings.HasSuffix(stem, "iz"):
		return stem + "e"
	case doubleCons(stem):
		switch stem[len(stem)-1] {
		case 'l', 's', 'z':
			return stem
		}
		return stem[:len(stem)-1]
	case measure(stem) == 1 && cvc(stem):
		return stem + "e"
	}
	return stem
}

func step1c(w string) string {
	if strings.HasSuffix(w, "y") && hasVowel(w[:len(w)-1]) {
		return w[:len(w)-1] + "i"
	}
	return w
}
