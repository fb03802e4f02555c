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
