package encoder

import "fmt"

// USEPieceIDs exposes the tokenizer to the tests: all the ids of text's
// pieces, before the model's limit of 128.
func USEPieceIDs(u *USE, text string) []int32 { return u.w.pieces.encode(text) }

// USEKernels names the matrix kernels this processor runs, the one Embed
// uses last.
func USEKernels() []string {
	var names []string
	for _, k := range availableKernels() {
		names = append(names, k.String())
	}
	return names
}

// SetUSEKernel makes Embed use the named kernel (one of USEKernels) until
// restore is called. Not for concurrent tests.
func SetUSEKernel(name string) (restore func(), err error) {
	for _, k := range availableKernels() {
		if k.String() == name {
			old := useKern
			useKern = k
			return func() { useKern = old }, nil
		}
	}
	return nil, fmt.Errorf("kernel %q not available: %v", name, USEKernels())
}
