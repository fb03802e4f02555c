package retrieval

// Sentences exposes sentences to the tests.
var Sentences = sentences

// Intents exposes intents to the tests.
var Intents = intents
