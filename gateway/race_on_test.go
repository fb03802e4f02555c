//go:build race

package gateway_test

// raceEnabled: the race detector is on, which slows the window tests
// tenfold; they run fewer rounds under it (.ci/run runs them in full
// without it).
const raceEnabled = true
