//go:build race

package budget_test

// raceEnabled makes the heaviest tests check a sample instead of everything.
const raceEnabled = true
