//go:build race

package encoder

// raceOn makes the kernel tests check a sample of the shapes: the race
// detector finds nothing in one goroutine's arithmetic (and the assembly
// is not instrumented) but makes the Go reference several times slower.
// .ci/run runs them once more without -race, every shape.
const raceOn = true
