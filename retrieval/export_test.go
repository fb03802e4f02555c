package retrieval

// Sentences exposes sentences to the tests.
var Sentences = sentences

// Intents exposes intents to the tests.
var Intents = intents

// FeedbackPart exposes feedbackPart to the tests: the expansion of a
// one-part request.
func FeedbackPart(task string, ranked []Match, n int) (string, bool) {
	p, ok := feedbackPart([]part{{text: task, weight: thoughtWeight}}, ranked, n)
	if ok && !p.wordsOnly {
		panic("feedback part searched by the semantic signal")
	}
	return p.text, ok
}

// AssocPart exposes the word-association expansion of a one-part request
// by the embedded table, at weight w.
func AssocPart(task string, w float64) (string, float64, bool) {
	table, err := assocOnce()
	if err != nil {
		panic(err)
	}
	p, ok := assocPart([]part{{text: task, weight: thoughtWeight}}, table, w)
	if ok && !p.wordsOnly {
		panic("association part searched by the semantic signal")
	}
	return p.text, p.weight, ok
}

// ParseAssoc exposes the table's reader.
func ParseAssoc(text string) (int, error) {
	m, err := parseAssoc(text)
	return len(m), err
}

// KeepInReach exposes keepInReach.
var KeepInReach = keepInReach
