//go:build !race

package toolsift_test

const raceEnabled = false
