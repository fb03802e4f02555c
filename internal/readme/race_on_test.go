//go:build race

package readme_test

// raceEnabled: the test binary is built with -race.
const raceEnabled = true
