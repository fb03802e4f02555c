package agent

// DefaultMaxToolCalls is Options.MaxToolCalls' default, for the tests that
// check it is applied.
const DefaultMaxToolCalls = defaultMaxToolCalls
