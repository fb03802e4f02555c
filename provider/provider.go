// Package provider is how toolsift reaches an OpenAI-compatible API, for
// chat (openaimodel.NewChat) and embeddings ([NewEmbedder], a
// [toolindex.Embedder]) alike: one options struct, one rule for the
// environment, one retry default. It is the adapter at the edge: the
// ranking packages (toolindex, retrieval, budget, think) compile no HTTP
// SDK, and a caller configures an endpoint with [Options] alone, without
// importing openai-go.
//
// The rule: a field set in [Options] wins; an empty BaseURL is
// $OPENAI_BASE_URL, else [DefaultBaseURL]; an empty APIKey is
// $OPENAI_API_KEY. api.openai.com needs a key; other servers (Ollama, vLLM,
// llama.cpp, LiteLLM, LM Studio) get none when none is set. Requests that
// fail with a connection error, 408, 409, 429 or 5xx are retried
// 3 times with backoff (or the wait the server asks for).
package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/toolsift/toolsift/internal/httpbound"
	"github.com/toolsift/toolsift/internal/redact"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// defaultMaxRetries is how often a failed request is retried.
const defaultMaxRetries = 3

// ErrOptions reports [Options] that cannot reach an endpoint (a base URL
// that is not http(s), or api.openai.com without a key) and invalid
// [EmbedderOptions].
var ErrOptions = errors.New("provider: invalid options")

// Options say where and how to reach the API. The zero value uses the
// environment (see the package doc).
type Options struct {
	// BaseURL of the API, up to and including the version path:
	// "https://api.openai.com/v1", "http://localhost:11434/v1" (Ollama),
	// "http://localhost:8000/v1" (vLLM), "http://localhost:8080/v1"
	// (llama.cpp). Empty means $OPENAI_BASE_URL, else [DefaultBaseURL].
	BaseURL string
	// APIKey is sent as a bearer token. Empty means $OPENAI_API_KEY.
	APIKey string
	// HTTPClient sends the requests; nil means openai-go's default.
	HTTPClient *http.Client
	// MaxRetries of a failed request. Zero means 3; a negative value
	// disables retries.
	MaxRetries int
	// MaxRetryDelay bounds one wait between retries; zero means
	// openai-go's (8 s of backoff, 2 min when the server asks).
	MaxRetryDelay time.Duration

	// MaxReplyBytes bounds one reply's body, a whole event stream
	// included (so each server-sent event too): zero means
	// 64 MiB (a reply of 128k tokens streamed a token per event is about
	// 40 MB), negative no limit. A larger reply fails the request with an
	// error saying so (docs/limits.md).
	MaxReplyBytes int64
	// ReplyTimeout bounds one request, from sending it to the reply's
	// last byte: zero means 10 minutes (as OpenAI's and
	// Anthropic's own SDKs), negative none. The ctx of a call still ends
	// it sooner.
	ReplyTimeout time.Duration
	// ReplyIdleTimeout bounds the wait for the next bytes once a reply's
	// headers came (a stream that stalls): zero means
	// 2 minutes, negative none.
	ReplyIdleTimeout time.Duration
}

// Defaults of the reply limits of [Options].
const (
	defaultMaxReplyBytes    = httpbound.DefaultMaxBytes
	defaultReplyTimeout     = httpbound.DefaultTimeout
	defaultReplyIdleTimeout = httpbound.DefaultIdleTimeout
)

// Resolve applies the environment rule and the defaults: the result has
// BaseURL, MaxRetries and the reply limits set (a limit of 0 there is off). getenv nil means [os.Getenv].
func (o Options) Resolve(getenv func(string) string) (Options, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.BaseURL == "" {
		o.BaseURL = getenv("OPENAI_BASE_URL")
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return o, fmt.Errorf("%w: base URL %q is not an http(s) URL", ErrOptions, redact.URL(o.BaseURL))
	}
	if o.APIKey == "" {
		o.APIKey = getenv("OPENAI_API_KEY")
	}
	if o.APIKey == "" && u.Host == "api.openai.com" {
		return o, fmt.Errorf("%w: no API key for %s: set OPENAI_API_KEY, or OPENAI_BASE_URL for another server", ErrOptions, u.Host)
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = defaultMaxRetries
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	// After Resolve a reply limit of 0 is off.
	o.MaxReplyBytes = httpbound.Resolve(o.MaxReplyBytes, defaultMaxReplyBytes)
	o.ReplyTimeout = httpbound.Resolve(o.ReplyTimeout, defaultReplyTimeout)
	o.ReplyIdleTimeout = httpbound.Resolve(o.ReplyIdleTimeout, defaultReplyIdleTimeout)
	return o, nil
}

// host is the base URL's host, for names and messages.
func (o Options) host() string {
	if u, err := url.Parse(o.BaseURL); err == nil {
		return u.Host
	}
	return ""
}
