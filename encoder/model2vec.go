package encoder

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

var (
	// ErrModel2VecInvalid reports a Model2Vec directory whose files are
	// missing, truncated, malformed or inconsistent with each other (a
	// vocabulary of another size than the embedding matrix). The error
	// names the file and, where there is one, the field or tensor.
	ErrModel2VecInvalid = errors.New("encoder: invalid Model2Vec model")
	// ErrModel2VecUnsupported reports a well-formed Model2Vec directory
	// that uses something this package does not implement: a tokenizer
	// model other than WordPiece, another normalizer or pre-tokenizer, or
	// a tensor dtype it cannot decode. The error names the file and field.
	ErrModel2VecUnsupported = errors.New("encoder: unsupported Model2Vec model")
)

// m2vDefaultMaxLength is model2vec's default for encode(max_length=...).
const m2vDefaultMaxLength = 512

// Model2VecOptions configures [LoadModel2Vec]. Nil or the zero value gives
// the defaults, which embed as model2vec's StaticModel.encode does.
type Model2VecOptions struct {
	// MaxLength is how many tokens of a text count; the rest are dropped.
	// As in model2vec, a text is first cut to MaxLength times the median
	// token length (in characters) of the vocabulary, so that a huge text
	// is not tokenized whole. Default 512, model2vec's default; negative
	// means no limit.
	MaxLength int
}

// Model2Vec is a Model2Vec static embedding model: a text's vector is the
// mean of the vectors of its tokens. It implements toolindex.Embedder and
// is safe for concurrent use (it is never modified after loading).
type Model2Vec struct {
	id        string
	dim       int
	emb       []float32 // rows × dim, row-major
	weights   []float32 // per token id, or nil
	mapping   []int32   // token id → row, or nil (then the id is the row)
	tokens    []string  // token id → token, for Tokens
	normalize bool
	maxLen    int // tokens; <0 for no limit
	maxRunes  int // characters of text read; <0 for no limit
	tok       *wordpieceTokenizer
}

// The files of a Model2Vec directory, as model2vec saves them.
const (
	m2vTensorsFile   = "model.safetensors"
	m2vTokenizerFile = "tokenizer.json"
	m2vConfigFile    = "config.json"
)

// LoadModel2Vec loads a [Model2Vec] model (github.com/MinishLab/model2vec)
// from a directory holding model.safetensors, tokenizer.json and
// config.json, as saved by StaticModel.save_pretrained or downloaded from
// a model hub (for example minishlab/potion-retrieval-32M). Nothing is
// fetched: the files must be there.
//
// Supported: an "embeddings" tensor (or sentence-transformers'
// "embedding.weight") of dtype F32, F16, BF16, F64 or I8; the optional
// per-token "weights" tensor and the "mapping" tensor of a
// vocabulary-quantised model; a WordPiece tokenizer with a BertNormalizer
// (or Lowercase, StripAccents, NF[K]C/D and Sequences of them), a
// BertPreTokenizer or WhitespaceSplit, and added tokens; and "normalize"
// from config.json. Unigram and BPE tokenizers (and other normalizers or
// pre-tokenizers) are refused with [ErrModel2VecUnsupported] naming the file
// and field. Texts are tokenized without special tokens ([CLS] and [SEP]
// are not added), unknown tokens are dropped, and the vector is the mean
// of the token rows (each scaled by its weight, if the model has weights),
// L2-normalised when config.json says "normalize": true. A text with no
// known token embeds to the zero vector.
//
// # Which embedder to use
//
// The built-in toolindex.LocalEmbedder needs no files and is tuned for
// tool text in English; start there. Prefer a Model2Vec model when tools
// or queries use a larger vocabulary than it knows (synonyms, jargon), are
// in other languages (pick a multilingual model), or when users bring
// their own model: it embeds a short text in microseconds on a CPU,
// offline, for the memory of its matrix, held as float32 whatever the
// file's dtype (about 130 MB for potion-retrieval-32M). Prefer toolindex's OpenAI-compatible embedder (OpenAI,
// Ollama, vLLM, any /v1/embeddings server) for the best retrieval quality,
// when a server is there to call and a few milliseconds per batch are fine.
//
// A missing file gives an error that matches both [ErrModel2VecInvalid] and
// fs.ErrNotExist.
//
// ID is "model2vec:<directory name>:<dimension>:<hash>", the hash covering
// the tensors, the tokenizer and the settings that change vectors, so an
// index saved with one model or setting is refused with another.
func LoadModel2Vec(dir string, opts *Model2VecOptions) (*Model2Vec, error) {
	var o Model2VecOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxLength == 0 {
		o.MaxLength = m2vDefaultMaxLength
	}
	m := &Model2Vec{maxLen: o.MaxLength}

	cfgPath := filepath.Join(dir, m2vConfigFile)
	cfgData, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel2VecInvalid, err)
	}
	var cfg struct {
		Normalize *bool `json:"normalize"`
	}
	if err := json.Unmarshal(cfgData, &cfg); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrModel2VecInvalid, cfgPath, err)
	}
	m.normalize = cfg.Normalize != nil && *cfg.Normalize

	tokPath := filepath.Join(dir, m2vTokenizerFile)
	tokData, err := os.ReadFile(tokPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel2VecInvalid, err)
	}
	if m.tok, err = m2vParseTokenizer(tokData, tokPath); err != nil {
		return nil, err
	}

	stPath := filepath.Join(dir, m2vTensorsFile)
	sum, err := m.loadTensors(stPath)
	if err != nil {
		return nil, err
	}
	if err := m.indexTokens(tokPath, stPath); err != nil {
		return nil, err
	}

	m.maxRunes = -1
	if m.maxLen > 0 {
		m.maxRunes = m.maxLen * m.tok.medianTokenLen()
	}
	h := sha256.New()
	h.Write(sum)
	h.Write(tokData)
	var settings [9]byte
	if m.normalize {
		settings[0] = 1
	}
	binary.LittleEndian.PutUint64(settings[1:], uint64(int64(m.maxLen)))
	h.Write(settings[:])
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	name := filepath.Base(abs)
	m.id = fmt.Sprintf("model2vec:%s:%d:%s", name, m.dim, hex.EncodeToString(h.Sum(nil))[:12])
	return m, nil
}

// loadTensors reads the embedding matrix and the optional weights and
// mapping from the safetensors file at path, and returns the SHA-256 of the
// whole file.
func (m *Model2Vec) loadTensors(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel2VecInvalid, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel2VecInvalid, err)
	}
	st, err := m2vParseSafetensors(f, fi.Size(), path)
	if err != nil {
		return nil, err
	}
	embT, ok := st.tensors["embeddings"]
	if !ok {
		if embT, ok = st.tensors["embedding.weight"]; !ok {
			return nil, fmt.Errorf("%w: %s: no tensor \"embeddings\" (has %s)", ErrModel2VecInvalid, path, strings.Join(st.names(), ", "))
		}
	}
	if len(embT.shape) != 2 || embT.shape[0] < 1 || embT.shape[1] < 1 {
		return nil, fmt.Errorf("%w: %s: tensor %q has shape %v, want [vocabulary, dimension]", ErrModel2VecInvalid, path, embT.name, embT.shape)
	}
	if embT.shape[0] > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %s: tensor %q has %d rows", ErrModel2VecUnsupported, path, embT.name, embT.shape[0])
	}
	m.dim = int(embT.shape[1])
	if m.emb, err = st.floats(embT); err != nil {
		return nil, err
	}
	rows := embT.shape[0]
	if wt, ok := st.tensors["weights"]; ok {
		if len(wt.shape) != 1 {
			return nil, fmt.Errorf("%w: %s: tensor \"weights\" has shape %v, want [vocabulary]", ErrModel2VecInvalid, path, wt.shape)
		}
		if m.weights, err = st.floats(wt); err != nil {
			return nil, err
		}
	}
	if mt, ok := st.tensors["mapping"]; ok {
		if len(mt.shape) != 1 {
			return nil, fmt.Errorf("%w: %s: tensor \"mapping\" has shape %v, want [vocabulary]", ErrModel2VecInvalid, path, mt.shape)
		}
		mapping, err := st.ints(mt)
		if err != nil {
			return nil, err
		}
		m.mapping = make([]int32, len(mapping))
		for i, r := range mapping {
			if r < 0 || r >= rows {
				return nil, fmt.Errorf("%w: %s: tensor \"mapping\": token %d maps to row %d of %d", ErrModel2VecInvalid, path, i, r, rows)
			}
			m.mapping[i] = int32(r)
		}
	}

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrModel2VecInvalid, path, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrModel2VecInvalid, path, err)
	}
	return h.Sum(nil), nil
}

// indexTokens checks that the tokenizer's vocabulary fits the tensors, as
// model2vec does (one row, or one mapping entry, per token; one weight per
// token), and builds the id → token table.
func (m *Model2Vec) indexTokens(tokPath, stPath string) error {
	rows := len(m.emb) / m.dim
	n, what := rows, "tensor \"embeddings\" has"
	if m.mapping != nil {
		n, what = len(m.mapping), "tensor \"mapping\" has"
	}
	if m.tok.size != n {
		return fmt.Errorf("%w: %s %d rows but %s has %d tokens (files %s and %s)", ErrModel2VecInvalid, what, n, m2vTokenizerFile, m.tok.size, stPath, tokPath)
	}
	if m.weights != nil && len(m.weights) != n {
		return fmt.Errorf("%w: %s: tensor \"weights\" has %d values for %d tokens", ErrModel2VecInvalid, stPath, len(m.weights), n)
	}
	m.tokens = make([]string, n)
	bad := func(tok string, id int32) error {
		return fmt.Errorf("%w: %s: token %q has id %d, but there are %d tokens", ErrModel2VecInvalid, tokPath, tok, id, n)
	}
	for t, id := range m.tok.vocab {
		if int(id) >= n {
			return bad(t, id)
		}
		m.tokens[id] = t
	}
	for _, at := range m.tok.rawAdded.tokens {
		if int(at.ID) >= n {
			return bad(at.Content, int32(at.ID))
		}
		m.tokens[at.ID] = at.Content
	}
	for _, at := range m.tok.normAdded.tokens {
		if int(at.ID) >= n {
			return bad(at.Content, int32(at.ID))
		}
		m.tokens[at.ID] = at.Content
	}
	return nil
}

// ID names the model, its dimension and a hash of its files and settings,
// for example "model2vec:potion-retrieval-32M:512:3f2a9c01b7de".
func (m *Model2Vec) ID() string { return m.id }

// Dim is the length of the vectors.
func (m *Model2Vec) Dim() int { return m.dim }

// Tokens returns the tokens of text that make its vector, in order: after
// tokenization, with unknown tokens dropped and at most MaxLength of them.
// It shows what the model reads, to check a model was loaded right.
func (m *Model2Vec) Tokens(text string) []string {
	ids := m.ids(text, nil)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = m.tokens[id]
	}
	return out
}

// ids appends the token ids that count in text to buf.
func (m *Model2Vec) ids(text string, buf []int32) []int32 {
	text = strings.ToValidUTF8(text, "\uFFFD")
	if m.maxRunes >= 0 && len(text) > m.maxRunes {
		// Cut after maxRunes characters.
		n := 0
		for i := range text {
			if n == m.maxRunes {
				text = text[:i]
				break
			}
			n++
		}
	}
	ids := m.tok.tokenize(text, buf[:0])
	kept := ids[:0]
	for _, id := range ids {
		if id != m.tok.unk {
			kept = append(kept, id)
		}
	}
	if m.maxLen >= 0 && len(kept) > m.maxLen {
		kept = kept[:m.maxLen]
	}
	return kept
}

// Embed returns one vector per text, of length Dim: the mean of the rows
// of its tokens, L2-normalised if the model's config says so.
func (m *Model2Vec) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	all := make([]float32, len(texts)*m.dim)
	acc := make([]float64, m.dim)
	var ids []int32
	for i, text := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("encoder: model2vec embed %d texts: %w", len(texts), err)
			}
		}
		ids = m.ids(text, ids)
		vec := all[i*m.dim : (i+1)*m.dim : (i+1)*m.dim]
		out[i] = vec
		if len(ids) == 0 {
			continue
		}
		clear(acc)
		for _, id := range ids {
			row := int(id)
			if m.mapping != nil {
				row = int(m.mapping[id])
			}
			r := m.emb[row*m.dim : (row+1)*m.dim]
			acc := acc[:len(r)] // lets the compiler drop the bounds checks
			if m.weights == nil {
				for j, x := range r {
					acc[j] += float64(x)
				}
				continue
			}
			w := float64(m.weights[id])
			for j, x := range r {
				acc[j] += w * float64(x)
			}
		}
		inv := 1 / float64(len(ids))
		var sum float64
		for j := range acc {
			acc[j] *= inv
			sum += acc[j] * acc[j]
		}
		scale := float64(1)
		if m.normalize {
			// model2vec divides by norm+1e-32, so a zero mean stays zero.
			scale = 1 / (math.Sqrt(sum) + 1e-32)
		}
		for j, x := range acc {
			vec[j] = float32(x * scale)
		}
	}
	return out, nil
}
