package toolindex

// Dimension is dimension, for the tests that check what length of vectors
// an index took from its embedder or its file.
func (ix *Index) Dimension() int { return ix.dimension() }
