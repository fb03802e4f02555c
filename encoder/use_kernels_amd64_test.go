//go:build amd64 && !purego

package encoder_test

import (
	"testing"

	"github.com/toolsift/toolsift/encoder"
)

// TestUSEQueriesKernelsAgree embeds the fixture's texts with EmbedQueries
// on each assembly kernel the processor runs: the int16 path gives the
// same vectors to the bit on all of them (the int32 sums are exact and
// the float operations the same), so AVX-512's VPDPWSSD and VPMADDWD
// kernels rank as the AVX2 one that was measured (docs/measurements.md).
func TestUSEQueriesKernelsAgree(t *testing.T) {
	ref := loadUSEReference(t)
	u := mustUSE(t)
	var texts []string
	for _, r := range ref.Texts {
		texts = append(texts, r.Text)
	}
	// One call of all, and each text alone: other batch shapes.
	kernels, want := queryVectorsPerKernel(t, u, texts, true)
	if len(kernels) < 2 {
		t.Skipf("one kernel with an int16 path on this processor (%v): nothing to compare", encoder.USEKernels())
	}
	for i, k := range kernels[1:] {
		checkSameVectors(t, texts, kernels[0], k, want[0], want[i+1])
	}
}
