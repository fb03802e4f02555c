package provider

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/openai/openai-go/v3"

	"github.com/toolsift/toolsift/internal/openaiclient"
	"github.com/toolsift/toolsift/toolindex"
)

// EmbedderOptions configure an [Embedder]. Zero fields take defaults.
type EmbedderOptions struct {
	// Options say where and how to reach the API: base URL, key, HTTP
	// client, retries, with the package's environment rule (the same as
	// openaimodel.NewChat's: $OPENAI_BASE_URL and $OPENAI_API_KEY when unset).
	Options
	// Dimensions, when set, is sent as the request's "dimensions" (models
	// that support shortening, such as text-embedding-3-*) and every
	// returned vector must have that length.
	Dimensions int
	// BatchSize is the number of texts per request. Default 256; OpenAI
	// accepts up to 2048 inputs and 300,000 tokens per request.
	BatchSize int
	// EncodingFormat is "base64" (the default: a third of the bytes of
	// JSON floats) or "float", for servers that do not know base64.
	EncodingFormat string
}

// Embedder embeds texts with the /embeddings endpoint of any
// OpenAI-compatible API, one request per batch of texts: a
// [toolindex.Embedder] for the vectors of a [toolindex.Index] (as its main
// embedder or as [toolindex.Options.Semantic]). It is safe for concurrent
// use.
type Embedder struct {
	client   openai.Client
	model    string
	dims     int          // requested dimension, 0 for the model's own
	seen     atomic.Int64 // dimension of the vectors returned so far
	batch    int
	encoding openai.EmbeddingNewParamsEncodingFormat
	id       string
}

var _ toolindex.Embedder = (*Embedder)(nil)

// NewEmbedder returns an embedder for model (for example
// "text-embedding-3-small" or, with Ollama, "nomic-embed-text"). It does
// not contact the server. [Options] that cannot reach an endpoint fail here
// with an error wrapping [ErrOptions]; a negative Dimensions wraps
// [toolindex.ErrDimension] too.
func NewEmbedder(model string, opts *EmbedderOptions) (*Embedder, error) {
	var o EmbedderOptions
	if opts != nil {
		o = *opts
	}
	if model == "" {
		return nil, fmt.Errorf("%w: NewEmbedder: empty model name", ErrOptions)
	}
	endpoint, err := o.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("provider: NewEmbedder: %w", err)
	}
	if o.Dimensions < 0 {
		return nil, fmt.Errorf("%w: NewEmbedder: %w: Dimensions = %d", ErrOptions, toolindex.ErrDimension, o.Dimensions)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	var enc openai.EmbeddingNewParamsEncodingFormat
	switch o.EncodingFormat {
	case "", "base64":
		enc = openai.EmbeddingNewParamsEncodingFormatBase64
	case "float":
		enc = openai.EmbeddingNewParamsEncodingFormatFloat
	default:
		return nil, fmt.Errorf("%w: NewEmbedder: EncodingFormat %q, want base64 or float", ErrOptions, o.EncodingFormat)
	}
	id := "openai:" + model
	if o.Dimensions > 0 {
		id += ":" + strconv.Itoa(o.Dimensions)
	}
	id += "@" + endpoint.host()
	e := &Embedder{
		client:   openaiclient.New(openaiclient.Endpoint(endpoint)),
		model:    model,
		dims:     o.Dimensions,
		batch:    o.BatchSize,
		encoding: enc,
		id:       id,
	}
	return e, nil
}

// BatchSize is how many texts one request carries; a [toolindex.Index]
// sends the embedder batches of this size.
func (e *Embedder) BatchSize() int { return e.batch }

// ID returns "openai:<model>[:<dimensions>]@<host of the base URL>".
func (e *Embedder) ID() string { return e.id }

// Embed embeds texts in requests of at most BatchSize texts. Vectors come
// back in the order of texts, whatever order the server lists them in. An
// empty text is sent as a single space (the API rejects empty input).
// Every vector must have the same length, Dimensions when set, or Embed
// returns an error wrapping [toolindex.ErrDimension]. API errors wrap
// openai-go's *openai.Error (reachable with errors.As).
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.batch {
		end := min(start+e.batch, len(texts))
		vecs, err := e.embedBatch(ctx, texts[start:end])
		if err != nil {
			return nil, fmt.Errorf("provider: %s: embed texts %d..%d: %w", e.id, start, end-1, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	input := texts
	if slices.Contains(texts, "") {
		input = slices.Clone(texts)
		for i, t := range input {
			if t == "" {
				input[i] = " "
			}
		}
	}
	params := openai.EmbeddingNewParams{
		Model:          e.model,
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: input},
		EncodingFormat: e.encoding,
	}
	if e.dims > 0 {
		params.Dimensions = openai.Int(int64(e.dims))
	}
	res, err := e.client.Embeddings.New(ctx, params)
	if err != nil {
		return nil, err
	}
	data := slices.Clone(res.Data)
	slices.SortFunc(data, func(a, b openai.Embedding) int { return cmp.Compare(a.Index, b.Index) })
	if len(data) != len(texts) {
		return nil, fmt.Errorf("%w: %d embeddings for %d texts", toolindex.ErrDimension, len(data), len(texts))
	}
	out := make([][]float32, len(data))
	for i, d := range data {
		if d.Index != int64(i) {
			return nil, fmt.Errorf("%w: embedding indexes are not 0..%d (found %d at position %d)", toolindex.ErrDimension, len(texts)-1, d.Index, i)
		}
		if err := e.checkDim(len(d.Embedding)); err != nil {
			return nil, fmt.Errorf("embedding %d: %w", i, err)
		}
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			v[j] = float32(x)
		}
		out[i] = v
	}
	return out, nil
}

// checkDim checks one returned vector's length against Dimensions or, when
// that is unset, against the vectors returned before.
func (e *Embedder) checkDim(n int) error {
	if n == 0 {
		return fmt.Errorf("%w: empty vector", toolindex.ErrDimension)
	}
	if e.dims > 0 {
		if n != e.dims {
			return fmt.Errorf("%w: vector of length %d, Dimensions is %d", toolindex.ErrDimension, n, e.dims)
		}
		return nil
	}
	if e.seen.CompareAndSwap(0, int64(n)) {
		return nil
	}
	if seen := e.seen.Load(); int64(n) != seen {
		return fmt.Errorf("%w: vector of length %d, earlier vectors had %d", toolindex.ErrDimension, n, seen)
	}
	return nil
}
