package encoder

// USEPieceIDs exposes the tokenizer to the tests: all the ids of text's
// pieces, before the model's limit of 128.
func USEPieceIDs(u *USE, text string) []int32 { return u.w.pieces.encode(text) }
