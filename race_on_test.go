//go:build race

package toolsift_test

// raceEnabled: the test binary is built with -race.
const raceEnabled = true
