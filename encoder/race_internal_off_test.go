//go:build !race

package encoder

const raceOn = false
