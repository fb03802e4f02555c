package retrieval

// Sentences exposes sentences to the tests.
var Sentences = sentences
