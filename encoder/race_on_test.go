//go:build race

package encoder_test

// raceEnabled reports a build with the race detector, under which the
// portable kernel is too slow to embed the fixture's long documents.
const raceEnabled = true
