package encoder_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// This file writes tiny Model2Vec directories for the tests and examples:
// a 20-token WordPiece vocabulary, 8 dimensions, in the layout that
// model2vec's save_pretrained writes.

// tinyVocab is the vocabulary; a token's id is its index.
var tinyVocab = []string{
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "cafe", // 0-4
	"the", "play", "##ing", "##er", "tool", // 5-9
	"##s", "search", "weather", ",", "!", // 10-14
	".", "中", "a", "##b", "naive", // 15-19
}

// tinyRows is the embedding matrix, one row per token. Every value is
// exact in F16, BF16 and I8 (after scaling by 4), so all dtypes give the
// same vectors. Row i has a 1 in column i%8 and a small tag elsewhere.
var tinyRows = func() [][]float32 {
	rows := make([][]float32, len(tinyVocab))
	for i := range rows {
		r := make([]float32, 8)
		r[i%8] = 1
		r[(i+3)%8] += float32(i) / 4 // 0, 0.25, ... 4.75
		rows[i] = r
	}
	return rows
}()

// tinyTensor is one tensor to write into a safetensors file.
type tinyTensor struct {
	name  string
	dtype string
	shape []int64
	data  []byte
}

// writeSafetensors writes tensors in the safetensors layout: an 8-byte
// little-endian header length, the JSON header, then the data.
func writeSafetensors(path string, tensors ...tinyTensor) error {
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, tt := range tensors {
		header[tt.name] = map[string]any{
			"dtype":        tt.dtype,
			"shape":        tt.shape,
			"data_offsets": []int{len(data), len(data) + len(tt.data)},
		}
		data = append(data, tt.data...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	return os.WriteFile(path, out, 0o644)
}

// encodeFloats encodes values in dtype F64, F32, F16, BF16 or I8 (as value×4).
// The F16 encoder handles only the values the tests use: zero and normal
// numbers whose mantissa fits in 10 bits.
func encodeFloats(dtype string, vals []float32) []byte {
	var out []byte
	for _, v := range vals {
		bits := math.Float32bits(v)
		switch dtype {
		case "F64":
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(float64(v)))
		case "F32":
			out = binary.LittleEndian.AppendUint32(out, bits)
		case "BF16":
			out = binary.LittleEndian.AppendUint16(out, uint16(bits>>16))
		case "F16":
			var h uint16
			if v != 0 {
				exp := int(bits>>23&0xff) - 127 + 15
				h = uint16(bits>>31)<<15 | uint16(exp)<<10 | uint16(bits>>13&0x3ff)
			}
			out = binary.LittleEndian.AppendUint16(out, h)
		case "I8":
			out = append(out, byte(int8(v*4)))
		default:
			panic("encodeFloats: " + dtype)
		}
	}
	return out
}

// embeddings is the "embeddings" tensor of rows in dtype.
func embeddings(dtype string, rows [][]float32) tinyTensor {
	return tinyTensor{"embeddings", dtype, []int64{int64(len(rows)), int64(len(rows[0]))}, encodeFloats(dtype, slices.Concat(rows...))}
}

// tinyEmbeddings is the "embeddings" tensor of tinyRows in dtype.
func tinyEmbeddings(dtype string) tinyTensor { return embeddings(dtype, tinyRows) }

// tinyTokenizer is a tokenizer.json as the tokenizers library saves a BERT
// tokenizer: added special tokens, a BertNormalizer, a BertPreTokenizer, a
// post-processor (that model2vec does not use) and a WordPiece model.
func tinyTokenizer() map[string]any { return wordpieceTokenizerJSON(tinyVocab) }

// wordpieceTokenizerJSON is a BERT-like tokenizer.json for vocab, whose
// first four tokens are the special [PAD], [UNK], [CLS] and [SEP].
func wordpieceTokenizerJSON(vocabList []string) map[string]any {
	vocab := map[string]int{}
	for i, tok := range vocabList {
		vocab[tok] = i
	}
	var added []map[string]any
	for i, tok := range vocabList[:4] {
		added = append(added, map[string]any{"id": i, "content": tok, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
	}
	return map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{
			"type": "BertPreTokenizer",
		},
		"post_processor": map[string]any{"type": "BertProcessing", "sep": []any{"[SEP]", 3}, "cls": []any{"[CLS]", 2}},
		"decoder":        map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{
			"type":                      "WordPiece",
			"unk_token":                 "[UNK]",
			"continuing_subword_prefix": "##",
			"max_input_chars_per_word":  100,
			"vocab":                     vocab,
		},
	}
}

// writeJSON writes v as JSON to path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// makeModel writes a Model2Vec directory named name under parent, in the
// layout of model2vec's save_pretrained, and returns its path.
func makeModel(parent, name string, tokenizer map[string]any, normalize bool, tensors ...tinyTensor) (string, error) {
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := writeSafetensors(filepath.Join(dir, "model.safetensors"), tensors...); err != nil {
		return "", err
	}
	if err := writeJSON(filepath.Join(dir, "tokenizer.json"), tokenizer); err != nil {
		return "", err
	}
	cfg := map[string]any{"model_type": "model2vec", "architectures": []string{"StaticModel"}, "normalize": normalize}
	return dir, writeJSON(filepath.Join(dir, "config.json"), cfg)
}

// makeTinyModel writes the tiny model with its embeddings in dtype, or
// with tensors instead when some are given.
func makeTinyModel(parent, name, dtype string, normalize bool, tensors ...tinyTensor) (string, error) {
	if len(tensors) == 0 {
		tensors = []tinyTensor{tinyEmbeddings(dtype)}
	}
	return makeModel(parent, name, tinyTokenizer(), normalize, tensors...)
}

// writeTinyModel is makeTinyModel for tests.
func writeTinyModel(t testing.TB, parent, name, dtype string, normalize bool, tensors ...tinyTensor) string {
	t.Helper()
	dir, err := makeTinyModel(parent, name, dtype, normalize, tensors...)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
