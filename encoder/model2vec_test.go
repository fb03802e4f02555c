package encoder_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/toolindex"
)

var _ toolindex.Embedder = (*encoder.Model2Vec)(nil)

func loadTiny(t *testing.T, dtype string, normalize bool, opts *encoder.Model2VecOptions, tensors ...tinyTensor) *encoder.Model2Vec {
	t.Helper()
	dir := writeTinyModel(t, t.TempDir(), "tiny", dtype, normalize, tensors...)
	m, err := encoder.LoadModel2Vec(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModel2VecTokens(t *testing.T) {
	m := loadTiny(t, "F32", true, nil)
	tests := []struct {
		name, text string
		want       []string
	}{
		{"lowercase and punctuation split", "The tools!", []string{"the", "tool", "##s", "!"}},
		{"accents stripped", "Café NAÏVE", []string{"cafe", "naive"}},
		{"continuations", "playing player", []string{"play", "##ing", "play", "##er"}},
		{"punctuation inside a word", "tool,search.weather", []string{"tool", ",", "search", ".", "weather"}},
		{"longest piece first", "ab a", []string{"a", "##b", "a"}},
		{"unknown words dropped", "the xyz tools", []string{"the", "tool", "##s"}},
		// "playx" has a piece (play) but no segmentation of the rest:
		// the whole word is one unknown token, not "play".
		{"partly known word is unknown", "playx playing", []string{"play", "##ing"}},
		{"chinese characters split", "中weather中", []string{"中", "weather", "中"}},
		{"whitespace of all kinds", "the\ttools\nsearch\u00a0weather\u3000a", []string{"the", "tool", "##s", "search", "weather", "a"}},
		{"control characters removed", "wea\u0000ther se\u200barch", []string{"weather", "search"}},
		{"no special tokens added", "search", []string{"search"}},
		{"special tokens in the text are matched", "[CLS] search[SEP]", []string{"[CLS]", "search", "[SEP]"}},
		{"special tokens are not normalized", "[cls]", nil},
		{"empty", "", nil},
		{"only unknown", "zzz qqq", nil},
		{"invalid UTF-8", "search \xff weather", []string{"search", "weather"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := m.Tokens(tt.text)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Tokens(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

// Model2Vec models made from a custom vocabulary keep multi-word tokens
// as added tokens, matched in the normalized text before pre-tokenizing.
func TestModel2VecAddedTokens(t *testing.T) {
	tj := tinyTokenizer()
	added := tj["added_tokens"].([]map[string]any)
	tj["added_tokens"] = append(added,
		map[string]any{"id": 20, "content": "New York", "normalized": true, "special": false},
		map[string]any{"id": 21, "content": "<mask>", "normalized": false, "special": true, "lstrip": true, "rstrip": true},
		map[string]any{"id": 22, "content": "AB", "normalized": true, "special": false, "single_word": true},
	)
	rows := append(slices.Clone(tinyRows), tinyRows[0], tinyRows[1], tinyRows[2])
	dir, err := makeModel(t.TempDir(), "added", tj, true, embeddings("F32", rows))
	if err != nil {
		t.Fatal(err)
	}
	m, err := encoder.LoadModel2Vec(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		want []string
	}{
		{"I love New York!", []string{"new york", "!"}},
		{"NEW YORK weather", []string{"new york", "weather"}},
		{"new  york", nil},
		{"search <mask> weather", []string{"search", "<mask>", "weather"}},
		{"search <MASK>", []string{"search"}},
		{"ab, tab", []string{"ab", ","}},
		// single_word: "ab" inside "xab" is no added token, and "xab" is no
		// word of the vocabulary.
		{"xab", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, m.Tokens(tt.text), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Tokens(%q) (-want +got):\n%s", tt.text, diff)
		}
	}
}

// A truncation setting in tokenizer.json cuts the ids before unknown
// tokens are dropped, as the tokenizers library does inside encode.
func TestModel2VecTokenizerTruncation(t *testing.T) {
	tests := []struct {
		direction string
		want      []string
	}{
		{"Right", []string{"the", "tool"}}, // the [UNK] tool
		{"Left", []string{"tool", "##s"}},  // [UNK] tool ##s
	}
	for _, tt := range tests {
		tj := tinyTokenizer()
		tj["truncation"] = map[string]any{"direction": tt.direction, "max_length": 3, "strategy": "LongestFirst", "stride": 0}
		dir, err := makeModel(t.TempDir(), "trunc", tj, true, tinyEmbeddings("F32"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := encoder.LoadModel2Vec(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, m.Tokens("the zz tool zz tools")); diff != "" {
			t.Errorf("truncation %s: Tokens (-want +got):\n%s", tt.direction, diff)
		}
	}
}

func TestModel2VecMaxLength(t *testing.T) {
	// As in model2vec, the text is first cut to MaxLength × the median
	// token length in characters (here 4: "play", "cafe", ...), then
	// tokenized, then unknown tokens are dropped, then the first MaxLength
	// tokens are kept.
	text := "a zz ab . a a"
	tests := []struct {
		max  int
		want []string
	}{
		{1, []string{"a"}},                             // "a zz"
		{3, []string{"a", "a", "##b"}},                 // "a zz ab . a ", zz dropped before the cut
		{-1, []string{"a", "a", "##b", ".", "a", "a"}}, // no limit
	}
	for _, tt := range tests {
		m := loadTiny(t, "F32", true, &encoder.Model2VecOptions{MaxLength: tt.max})
		if diff := cmp.Diff(tt.want, m.Tokens(text)); diff != "" {
			t.Errorf("MaxLength %d: Tokens(%q) (-want +got):\n%s", tt.max, text, diff)
		}
	}
}

// normalized scales v to unit length, as the tests expect of a model whose
// config says "normalize": true.
func normalized(v []float64) []float32 {
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x / math.Sqrt(sum))
	}
	return out
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func TestModel2VecEmbed(t *testing.T) {
	// By hand from tinyRows (row i: 1 at i%8, i/4 added at (i+3)%8):
	//   the=5   [1.25 0 0 0 0 1 0 0]      tool=9  [0 1 0 0 2.25 0 0 0]
	//   ##s=10  [0 0 1 0 0 2.5 0 0]       !=14    [0 3.5 0 0 0 0 1 0]
	//   cafe=4  [0 0 0 0 1 0 0 1]         naive=19 [0 0 0 1 0 0 4.75 0]
	theTools := []float64{1.25 / 4, 4.5 / 4, 1.0 / 4, 0, 2.25 / 4, 3.5 / 4, 1.0 / 4, 0}
	cafeNaive := []float64{0, 0, 0, 0.5, 0.5, 0, 2.375, 0.5}
	texts := []string{"The tools!", "Café naïve", "nothing known", ""}
	zero := make([]float32, 8)
	tests := []struct {
		dtype     string
		normalize bool
		want      [][]float32
		opts      []cmp.Option
	}{
		{"F32", false, [][]float32{f32(theTools), f32(cafeNaive), zero, zero}, nil},
		{"F32", true, [][]float32{normalized(theTools), normalized(cafeNaive), zero, zero}, nil},
		{"F16", false, [][]float32{f32(theTools), f32(cafeNaive), zero, zero}, nil},
		{"F16", true, [][]float32{normalized(theTools), normalized(cafeNaive), zero, zero}, nil},
		{"BF16", false, [][]float32{f32(theTools), f32(cafeNaive), zero, zero}, nil},
		{"F64", false, [][]float32{f32(theTools), f32(cafeNaive), zero, zero}, nil},
		// I8 stores every value ×4 (see encodeFloats); only the direction
		// survives, and rounding may differ in the last bit.
		{"I8", true, [][]float32{normalized(theTools), normalized(cafeNaive), zero, zero}, []cmp.Option{cmpopts.EquateApprox(0, 1e-6)}},
	}
	for _, tt := range tests {
		name := tt.dtype
		if tt.normalize {
			name += "/normalize"
		}
		t.Run(name, func(t *testing.T) {
			m := loadTiny(t, tt.dtype, tt.normalize, nil)
			if m.Dim() != 8 {
				t.Errorf("Dim() = %d, want 8", m.Dim())
			}
			got, err := m.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, tt.opts...); diff != "" {
				t.Errorf("Embed(%q) (-want +got):\n%s", texts, diff)
			}
		})
	}
}

// A vocabulary-quantised model has fewer rows than tokens, a "mapping"
// from token id to row, and a "weights" tensor with a weight per token id
// that scales its row before the mean.
func TestModel2VecWeightsAndMapping(t *testing.T) {
	rows := make([]float32, 0, 4*8)
	for k := range 4 {
		r := make([]float32, 8)
		r[k] = 1
		r[k+4] = 0.5
		rows = append(rows, r...)
	}
	mapping := make([]byte, 0, len(tinyVocab)*8)
	weights := make([]float32, len(tinyVocab))
	for id := range tinyVocab {
		mapping = binary.LittleEndian.AppendUint64(mapping, uint64(id%4))
		weights[id] = 0.5
		if id%2 == 1 {
			weights[id] = 2
		}
	}
	m := loadTiny(t, "", false, nil,
		tinyTensor{"embeddings", "F32", []int64{4, 8}, encodeFloats("F32", rows)},
		tinyTensor{"weights", "F32", []int64{int64(len(tinyVocab))}, encodeFloats("F32", weights)},
		tinyTensor{"mapping", "I64", []int64{int64(len(tinyVocab))}, mapping},
	)
	// the=5 → row 1 ×2, tool=9 → row 1 ×2, ##s=10 → row 2 ×0.5, !=14 → row 2 ×0.5:
	// (4×[0 1 0 0 0 .5 0 0] + 1×[0 0 1 0 0 0 .5 0]) / 4.
	want := [][]float32{{0, 1, 0.25, 0, 0, 0.5, 0.125, 0}}
	got, err := m.Embed(context.Background(), []string{"The tools!"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Embed (-want +got):\n%s", diff)
	}
}

func TestModel2VecID(t *testing.T) {
	parent := t.TempDir()
	load := func(dir string, opts *encoder.Model2VecOptions) string {
		t.Helper()
		m, err := encoder.LoadModel2Vec(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		return m.ID()
	}
	f32Dir := writeTinyModel(t, parent, "tiny-f32", "F32", true)
	f16Dir := writeTinyModel(t, parent, "tiny-f16", "F16", true)
	rawDir := writeTinyModel(t, parent, "tiny-raw", "F32", false)

	id := load(f32Dir, nil)
	if !strings.HasPrefix(id, "model2vec:tiny-f32:8:") || len(id) != len("model2vec:tiny-f32:8:")+12 {
		t.Errorf("ID() = %q, want model2vec:tiny-f32:8:<12 hex digits>", id)
	}
	if again := load(f32Dir, &encoder.Model2VecOptions{MaxLength: 512}); again != id {
		t.Errorf("ID() of the same model and settings = %q, then %q", id, again)
	}
	others := map[string]string{
		"F16 tensors":   load(f16Dir, nil),
		"no normalize":  load(rawDir, nil),
		"MaxLength 64":  load(f32Dir, &encoder.Model2VecOptions{MaxLength: 64}),
		"no max length": load(f32Dir, &encoder.Model2VecOptions{MaxLength: -1}),
	}
	for what, other := range others {
		if other == id || strings.TrimPrefix(other, "model2vec:tiny-f32:8:") == strings.TrimPrefix(id, "model2vec:tiny-f32:8:") {
			t.Errorf("%s: ID() = %q, same hash as %q", what, other, id)
		}
	}
}

func TestModel2VecConcurrent(t *testing.T) {
	m := loadTiny(t, "F16", true, nil)
	texts := []string{"The tools!", "Café naïve", "playing search weather"}
	want, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := m.Embed(context.Background(), texts)
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("concurrent Embed (-want +got):\n%s", diff)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestModel2VecCanceled(t *testing.T) {
	m := loadTiny(t, "F32", true, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, []string{"the tools"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed with a canceled context: err = %v, want context.Canceled", err)
	}
}

func TestModel2VecErrors(t *testing.T) {
	// Each case breaks one thing of a good tiny model.
	tests := []struct {
		name    string
		breakIt func(t *testing.T, dir string)
		want    error
		mention []string // in the error message
	}{
		{"missing safetensors", remove("model.safetensors"), encoder.ErrModel2VecInvalid, []string{"model.safetensors"}},
		{"missing tokenizer", remove("tokenizer.json"), encoder.ErrModel2VecInvalid, []string{"tokenizer.json"}},
		{"missing config", remove("config.json"), encoder.ErrModel2VecInvalid, []string{"config.json"}},
		{"truncated safetensors", truncate("model.safetensors", 200), encoder.ErrModel2VecInvalid, []string{"model.safetensors", "data_offsets"}},
		{"truncated safetensors header", truncate("model.safetensors", 20), encoder.ErrModel2VecInvalid, []string{"model.safetensors", "header length"}},
		{"empty safetensors", truncate("model.safetensors", 0), encoder.ErrModel2VecInvalid, []string{"model.safetensors"}},
		{"absurd header length", func(t *testing.T, dir string) {
			writeRaw(t, filepath.Join(dir, "model.safetensors"), binary.LittleEndian.AppendUint64(nil, 1<<62))
		}, encoder.ErrModel2VecInvalid, []string{"model.safetensors", "header length"}},
		{"wrong dims: more rows than tokens", tensors(tinyTensor{"embeddings", "F32", []int64{21, 8}, make([]byte, 21*8*4)}), encoder.ErrModel2VecInvalid, []string{"model.safetensors", "tokenizer.json", "21 rows", "20 tokens"}},
		{"wrong dims: one-dimensional", tensors(tinyTensor{"embeddings", "F32", []int64{160}, make([]byte, 160*4)}), encoder.ErrModel2VecInvalid, []string{"model.safetensors", `"embeddings"`, "shape [160]"}},
		{"wrong dims: shape and bytes disagree", tensors(tinyTensor{"embeddings", "F32", []int64{20, 8}, make([]byte, 20*8*2)}), encoder.ErrModel2VecInvalid, []string{"model.safetensors", `"embeddings"`, "640 bytes"}},
		{"wrong dims: weights", tensors(tinyEmbeddings("F32"), tinyTensor{"weights", "F32", []int64{3}, make([]byte, 12)}), encoder.ErrModel2VecInvalid, []string{"model.safetensors", `"weights"`}},
		{"mapping out of range", tensors(tinyTensor{"embeddings", "F32", []int64{2, 8}, make([]byte, 2*8*4)}, tinyTensor{"mapping", "I32", []int64{20}, slicesRepeat([]byte{5, 0, 0, 0}, 20)}), encoder.ErrModel2VecInvalid, []string{"model.safetensors", `"mapping"`}},
		{"no embeddings tensor", tensors(tinyTensor{"other", "F32", []int64{20, 8}, make([]byte, 20*8*4)}), encoder.ErrModel2VecInvalid, []string{"model.safetensors", `"embeddings"`, "other"}},
		{"unsupported dtype", tensors(tinyTensor{"embeddings", "F8_E4M3", []int64{20, 8}, make([]byte, 160)}), encoder.ErrModel2VecUnsupported, []string{"model.safetensors", "F8_E4M3"}},
		{"unsupported tokenizer: BPE", tokenizer(func(tj map[string]any) {
			tj["model"] = map[string]any{"type": "BPE", "vocab": map[string]int{"a": 0}, "merges": []string{}}
		}), encoder.ErrModel2VecUnsupported, []string{"tokenizer.json", "model.type", "BPE"}},
		{"unsupported tokenizer: Unigram", tokenizer(func(tj map[string]any) {
			tj["model"] = map[string]any{"type": "Unigram", "unk_id": 0, "vocab": [][]any{{"a", -1.0}}}
		}), encoder.ErrModel2VecUnsupported, []string{"tokenizer.json", "model.type", "Unigram"}},
		{"unsupported normalizer", tokenizer(func(tj map[string]any) {
			tj["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "Lowercase"}, map[string]any{"type": "Replace"}}}
		}), encoder.ErrModel2VecUnsupported, []string{"tokenizer.json", "normalizer.normalizers[1].type", "Replace"}},
		{"unsupported pre-tokenizer", tokenizer(func(tj map[string]any) {
			tj["pre_tokenizer"] = map[string]any{"type": "Metaspace"}
		}), encoder.ErrModel2VecUnsupported, []string{"tokenizer.json", "pre_tokenizer.type", "Metaspace"}},
		{"unknown token not in vocabulary", tokenizer(func(tj map[string]any) {
			tj["model"].(map[string]any)["unk_token"] = "<unk>"
		}), encoder.ErrModel2VecInvalid, []string{"tokenizer.json", "model.unk_token", "<unk>"}},
		{"tokenizer not JSON", func(t *testing.T, dir string) {
			writeRaw(t, filepath.Join(dir, "tokenizer.json"), []byte("{"))
		}, encoder.ErrModel2VecInvalid, []string{"tokenizer.json"}},
		{"config not JSON", func(t *testing.T, dir string) {
			writeRaw(t, filepath.Join(dir, "config.json"), []byte(`{"normalize": "yes"}`))
		}, encoder.ErrModel2VecInvalid, []string{"config.json", "normalize"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTinyModel(t, t.TempDir(), "tiny", "F32", true)
			tt.breakIt(t, dir)
			m, err := encoder.LoadModel2Vec(dir, nil)
			if err == nil {
				t.Fatalf("LoadModel2Vec = %v, nil; want an error", m.ID())
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("LoadModel2Vec: err = %v, want %v", err, tt.want)
			}
			if strings.HasPrefix(tt.name, "missing ") && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("LoadModel2Vec: err = %v, want also fs.ErrNotExist", err)
			}
			for _, s := range tt.mention {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("LoadModel2Vec: err = %q, does not mention %q", err, s)
				}
			}
		})
	}
}

func remove(file string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, file)); err != nil {
			t.Fatal(err)
		}
	}
}

func truncate(file string, size int64) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Truncate(filepath.Join(dir, file), size); err != nil {
			t.Fatal(err)
		}
	}
}

func tensors(ts ...tinyTensor) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := writeSafetensors(filepath.Join(dir, "model.safetensors"), ts...); err != nil {
			t.Fatal(err)
		}
	}
}

func tokenizer(edit func(map[string]any)) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		tj := tinyTokenizer()
		edit(tj)
		if err := writeJSON(filepath.Join(dir, "tokenizer.json"), tj); err != nil {
			t.Fatal(err)
		}
	}
}

func writeRaw(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func slicesRepeat(b []byte, n int) []byte {
	var out []byte
	for range n {
		out = append(out, b...)
	}
	return out
}
