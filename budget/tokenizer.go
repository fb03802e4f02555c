package budget

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
)

// The encodings of current models. NewTokenizer also accepts the legacy
// p50k_base, p50k_edit and r50k_base (see Encodings).
const (
	EncodingO200K  = "o200k_base"  // gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4
	EncodingCL100K = "cl100k_base" // gpt-4, gpt-3.5-turbo, text-embedding-3-*, text-embedding-ada-002
)

// defaultEncoding is used for a model NewTokenizer does not recognise.
// Current OpenAI models and most OpenAI-compatible servers that copy
// their naming use o200k_base; for a model with its own tokenizer (Llama,
// Qwen, Claude...) every tiktoken count is an estimate anyway, and
// o200k_base's larger vocabulary is the closer one for modern models.
const defaultEncoding = EncodingO200K

var (
	// ErrUnknownEncoding reports an encoding name that tiktoken-go cannot
	// load offline.
	ErrUnknownEncoding = errors.New("budget: unknown encoding")
)

// encodings are the BPE tables the offline loader embeds. Each loads on first
// use and is then shared by every Tokenizer in the process.
var encodings = map[string]*encoding{
	EncodingO200K:  {},
	EncodingCL100K: {},
	"p50k_base":    {}, // legacy completion and code models
	"p50k_edit":    {}, // legacy edit models
	"r50k_base":    {}, // legacy GPT-3 models
}

type encoding struct {
	once sync.Once
	tk   *bpe
	err  error
}

// loadEncoding returns the named encoding, loading it from the tables
// embedded in tiktoken-go-loader the first time (never from the network, as
// tiktoken-go's default loader would). budget encodes with its own merge
// (bpe.go) and uses tiktoken-go only for its model table.
func loadEncoding(name string) (*bpe, error) {
	e, ok := encodings[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownEncoding, name, strings.Join(Encodings(), ", "))
	}
	e.once.Do(func() {
		e.tk, e.err = newBPE(name)
		if e.err != nil {
			e.err = fmt.Errorf("budget: load encoding %s: %w", name, e.err)
		}
	})
	return e.tk, e.err
}

// Encodings returns the names of the encodings NewTokenizer accepts, sorted.
func Encodings() []string {
	names := make([]string, 0, len(encodings))
	for n := range encodings {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// EncodingForModel returns the encoding of an OpenAI model and whether the
// model was recognised; for an unrecognised model it returns
// EncodingO200K and false. A provider prefix ("openai/gpt-4o") and date or size suffixes
// ("gpt-4o-2024-08-06", "gpt-4.1-mini") are accepted.
func EncodingForModel(model string) (string, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	m = path.Base(m) // "openai/gpt-4o" -> "gpt-4o"
	family := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if m == p || strings.HasPrefix(m, p+"-") {
				return true
			}
		}
		return false
	}
	switch {
	case m == "" || m == "." || m == "/":
		return defaultEncoding, false
	case family("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "gpt-oss"),
		strings.HasPrefix(m, "gpt-5"): // gpt-5, gpt-5.1, gpt-5-mini, ...
		return EncodingO200K, true
	case family("gpt-4", "gpt-3.5-turbo", "gpt-35-turbo", "gpt-3.5", "text-embedding-3-small",
		"text-embedding-3-large", "text-embedding-ada-002"):
		return EncodingCL100K, true
	}
	if enc, ok := tiktoken.MODEL_TO_ENCODING[m]; ok {
		if _, loadable := encodings[enc]; loadable {
			return enc, true
		}
	}
	return defaultEncoding, false
}

// Tokenizer counts tokens exactly as tiktoken does for one encoding, and
// caches the cost of tools (see Tokenizer.CountTool). It never touches the
// network: the BPE tables are embedded in the binary. A Tokenizer is safe for
// concurrent use.
type Tokenizer struct {
	name string
	tk   *bpe

	mu       sync.Mutex
	cache    map[string]*rendered // by content hash
	cacheMax int                  // see minCache
}

// NewTokenizer returns a Tokenizer for model, or for encoding when it is not
// empty (the explicit encoding wins). An unknown model gets defaultEncoding
// (o200k_base); use EncodingForModel to find out whether a model is known.
// An unknown encoding is an ErrUnknownEncoding.
//
// The first Tokenizer for an encoding loads its table (about 0.3 s and
// 100 MB for o200k_base); later ones share it.
func NewTokenizer(model, encoding string) (*Tokenizer, error) {
	name := strings.TrimSpace(encoding)
	if name == "" {
		name, _ = EncodingForModel(model)
	}
	tk, err := loadEncoding(name)
	if err != nil {
		return nil, err
	}
	return &Tokenizer{name: name, tk: tk, cache: map[string]*rendered{}, cacheMax: minCache}, nil
}

// Encoding returns the name of the tokenizer's encoding, e.g. "o200k_base".
func (t *Tokenizer) Encoding() string { return t.name }

// renderVersion is the version of what CountTool sends and counts; it changes
// whenever a tool's rendering (and so its token count) changes, so that
// counts cached under ID by an older version are not trusted.
const renderVersion = 1

// ID names what CountTool counts: the encoding and the version of the
// rendering ("o200k_base/render-1"). Two Tokenizers with the same ID give
// every tool the same token counts, so counts may be cached under it
// (keyed by the tool's content hash) across processes.
func (t *Tokenizer) ID() string { return fmt.Sprintf("%s/render-%d", t.name, renderVersion) }

// Count returns the number of tokens in s. Special-token text such as
// "<|endoftext|>" is counted as ordinary text, as the APIs do for message
// content. Invalid UTF-8 counts as U+FFFD.
func (t *Tokenizer) Count(s string) int {
	if s == "" {
		return 0
	}
	return t.tk.count(s)
}

// encode returns the tokens of s (ordinary text, as Count).
func (t *Tokenizer) encode(s string) []int { return t.tk.encode(s) }

// decode returns the text of tokens.
func (t *Tokenizer) decode(tokens []int) string { return t.tk.decode(tokens) }
