package toolindex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// OpenAIOptions configure an OpenAIEmbedder. Zero fields take defaults.
type OpenAIOptions struct {
	// BaseURL of an OpenAI-compatible API, up to and including the version
	// path: "https://api.openai.com/v1" (the default),
	// "http://localhost:11434/v1" (Ollama), "http://localhost:8000/v1"
	// (vLLM), "http://localhost:1234/v1" (LM Studio),
	// "http://localhost:8080/v1" (llama.cpp server).
	BaseURL string
	// APIKey is sent as a bearer token. Empty means the OPENAI_API_KEY
	// environment variable, and no key at all when that is unset (local
	// servers need none).
	APIKey string
	// Dimensions, when set, is sent as the request's "dimensions" (models
	// that support shortening, such as text-embedding-3-*) and every
	// returned vector must have that length.
	Dimensions int
	// BatchSize is the number of texts per request. Default 256; OpenAI
	// accepts up to 2048 inputs and 300,000 tokens per request.
	BatchSize int
	// MaxRetries is the number of retries of a request that failed with a
	// connection error, 408, 409, 429 or 5xx, with exponential backoff or
	// the wait the server asks for in Retry-After / Retry-After-Ms (up to
	// MaxRetryDelay; a longer wait fails at once). Default 3; -1 means no
	// retry. Waiting stops when ctx is done.
	MaxRetries int
	// MaxRetryDelay bounds one wait between retries. Default: openai-go's
	// (8 s of backoff, 2 min when the server says so).
	MaxRetryDelay time.Duration
	// EncodingFormat is "base64" (the default: a third of the bytes of
	// JSON floats) or "float", for servers that do not know base64.
	EncodingFormat string
	// HTTPClient sends the requests; nil means openai-go's default.
	HTTPClient *http.Client
}

// OpenAIEmbedder embeds texts with the /embeddings endpoint of any
// OpenAI-compatible API, one request per batch of texts. It is safe for
// concurrent use.
type OpenAIEmbedder struct {
	client   openai.Client
	model    string
	dims     int          // requested dimension, 0 for the model's own
	seen     atomic.Int64 // dimension of the vectors returned so far
	batch    int
	encoding openai.EmbeddingNewParamsEncodingFormat
	id       string
}

var _ Embedder = (*OpenAIEmbedder)(nil)

// NewOpenAIEmbedder returns an embedder for model (for example
// "text-embedding-3-small" or, with Ollama, "nomic-embed-text"). It does
// not contact the server.
func NewOpenAIEmbedder(model string, opts *OpenAIOptions) (*OpenAIEmbedder, error) {
	var o OpenAIOptions
	if opts != nil {
		o = *opts
	}
	if model == "" {
		return nil, errors.New("toolindex: NewOpenAIEmbedder: empty model name")
	}
	if o.BaseURL == "" {
		o.BaseURL = "https://api.openai.com/v1"
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("toolindex: NewOpenAIEmbedder: base URL %q is not an http(s) URL", o.BaseURL)
	}
	if o.Dimensions < 0 {
		return nil, fmt.Errorf("%w: NewOpenAIEmbedder: Dimensions = %d", ErrDimension, o.Dimensions)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = 3
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	var enc openai.EmbeddingNewParamsEncodingFormat
	switch o.EncodingFormat {
	case "", "base64":
		enc = openai.EmbeddingNewParamsEncodingFormatBase64
	case "float":
		enc = openai.EmbeddingNewParamsEncodingFormatFloat
	default:
		return nil, fmt.Errorf("toolindex: NewOpenAIEmbedder: EncodingFormat %q, want base64 or float", o.EncodingFormat)
	}
	ropts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL),
		option.WithMaxRetries(o.MaxRetries),
	}
	if o.APIKey != "" {
		ropts = append(ropts, option.WithAPIKey(o.APIKey))
	}
	if o.MaxRetryDelay > 0 {
		ropts = append(ropts, option.WithMaxRetryDelay(o.MaxRetryDelay))
	}
	if o.HTTPClient != nil {
		ropts = append(ropts, option.WithHTTPClient(o.HTTPClient))
	}
	id := "openai:" + model
	if o.Dimensions > 0 {
		id += ":" + strconv.Itoa(o.Dimensions)
	}
	id += "@" + u.Host
	e := &OpenAIEmbedder{
		client:   openai.NewClient(ropts...),
		model:    model,
		dims:     o.Dimensions,
		batch:    o.BatchSize,
		encoding: enc,
		id:       id,
	}
	return e, nil
}

// ID returns "openai:<model>[:<dimensions>]@<host of the base URL>".
func (e *OpenAIEmbedder) ID() string { return e.id }

// Embed embeds texts in requests of at most BatchSize texts. Vectors come
// back in the order of texts, whatever order the server lists them in. An
// empty text is sent as a single space (the API rejects empty input).
// Every vector must have the same length, Dimensions when set, or Embed
// returns an error wrapping ErrDimension. API errors wrap *openai.Error.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.batch {
		end := min(start+e.batch, len(texts))
		vecs, err := e.embedBatch(ctx, texts[start:end])
		if err != nil {
			return nil, fmt.Errorf("toolindex: %s: embed texts %d..%d: %w", e.id, start, end-1, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *OpenAIEmbedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
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
		return nil, fmt.Errorf("%w: %d embeddings for %d texts", ErrDimension, len(data), len(texts))
	}
	out := make([][]float32, len(data))
	for i, d := range data {
		if d.Index != int64(i) {
			return nil, fmt.Errorf("%w: embedding indexes are not 0..%d (found %d at position %d)", ErrDimension, len(texts)-1, d.Index, i)
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
func (e *OpenAIEmbedder) checkDim(n int) error {
	if n == 0 {
		return fmt.Errorf("%w: empty vector", ErrDimension)
	}
	if e.dims > 0 {
		if n != e.dims {
			return fmt.Errorf("%w: vector of length %d, Dimensions is %d", ErrDimension, n, e.dims)
		}
		return nil
	}
	if e.seen.CompareAndSwap(0, int64(n)) {
		return nil
	}
	if seen := e.seen.Load(); int64(n) != seen {
		return fmt.Errorf("%w: vector of length %d, earlier vectors had %d", ErrDimension, n, seen)
	}
	return nil
}
