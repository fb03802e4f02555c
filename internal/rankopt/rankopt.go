// Package rankopt sets the ranking features of package retrieval that were
// measured and left off (docs/measurements.md): they are not part of the
// public API, but the benchmarks and tests that measure them set them
// through this package. Package retrieval installs Set when it is
// initialised, so a program that imports retrieval can call it.
package rankopt

// Features are the ranking features measured and left off, and the switch
// of one that is on; the zero value is retrieval's default.
type Features struct {
	// IntentQuota, when positive, splits a request (its task, at a step
	// with no thought) into its asks and keeps the best IntentQuota tools
	// of each ask at least at the score they have for it, when the asks'
	// best tools are on at least two servers (intents.go).
	IntentQuota int
	// Feedback, when positive, expands the request with the words of its
	// Feedback best tools (pseudo-relevance feedback) and ranks again
	// (feedback.go).
	Feedback int
	// Associate, when positive, expands the request with the tool words a
	// fitted table associates with its words, as a part of Associate
	// times the request's weight searched by the word signals (assoc.go).
	Associate float64
	// NoReach turns off what is on by default: the semantic signal's
	// confident best kept among the first two (rank.go), to measure
	// the ranking without it.
	NoReach bool
	// ReachRank, when positive, is the place the semantic signal's best
	// is kept at (the default is 2), to measure others.
	ReachRank int
	// WindowWeight, when positive, searches the further windows of long
	// descriptions too (windows.go), a window's score counted at
	// WindowWeight times (at most 1).
	WindowWeight float64
	// AdditiveLift lifts a tool by its server's score as before issue 36's
	// third round, (tool + w × server) / (1 + w), instead of in proportion
	// to the tool's own score (servers.go); with ServerWeight 0.5 it is
	// that round's default (with ServerLexical).
	AdditiveLift bool
	// ServerLexical ranks the server documents with BM25F too, as before
	// issue 36's third round (servers.go).
	ServerLexical bool
	// RRF fuses the signals' rankings by weighted reciprocal rank instead
	// of the weighted sum of their normalised scores.
	RRF bool
}

// Set sets f on opts, a *retrieval.Options; it panics for anything else.
// New checks the values as it checks the options'.
var Set func(opts any, f Features)
