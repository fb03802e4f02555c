// Package openaiclient builds the openai-go client for a resolved
// endpoint. The two packages that talk to an OpenAI-compatible API, provider
// (its [provider.Embedder]) and agent (its chat model, openaimodel.Chat), build
// their clients here, so that neither has an openai-go type in its API: a
// caller configures an endpoint with [provider.Options] alone.
//
// [provider.Embedder]: https://pkg.go.dev/github.com/toolsift/toolsift/provider#Embedder
// [provider.Options]: https://pkg.go.dev/github.com/toolsift/toolsift/provider#Options
package openaiclient

import (
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolsift/toolsift/internal/httpbound"
)

// Endpoint is provider.Options after its Resolve, field for field, so that
// a caller converts one to the other (openaiclient.Endpoint(resolved)): the
// conversion stops compiling when the two structs drift apart.
type Endpoint struct {
	BaseURL       string
	APIKey        string
	HTTPClient    *http.Client
	MaxRetries    int
	MaxRetryDelay time.Duration

	MaxReplyBytes    int64
	ReplyTimeout     time.Duration
	ReplyIdleTimeout time.Duration
}

// New returns a client for e, its replies within e's limits (a limit of
// 0 is off). The base URL, key and retries come from e
// alone (openai-go's defaults read $OPENAI_BASE_URL and $OPENAI_API_KEY
// themselves; provider.Options.Resolve has already applied toolsift's one
// rule for them). An empty APIKey sends no Authorization header.
func New(e Endpoint) openai.Client {
	ro := []option.RequestOption{
		option.WithBaseURL(e.BaseURL),
		option.WithAPIKey(e.APIKey),
		option.WithMaxRetries(e.MaxRetries),
	}
	if e.MaxRetryDelay > 0 {
		ro = append(ro, option.WithMaxRetryDelay(e.MaxRetryDelay))
	}
	// Every reply within the limits (0: off): see internal/httpbound.
	hc := httpbound.Client(e.HTTPClient, httpbound.Limits{
		MaxBytes: e.MaxReplyBytes, Timeout: e.ReplyTimeout, IdleTimeout: e.ReplyIdleTimeout,
		MaxBytesOption: "provider.Options.MaxReplyBytes", TimeoutOption: "provider.Options.ReplyTimeout",
		IdleTimeoutOption: "provider.Options.ReplyIdleTimeout",
	})
	if hc != http.DefaultClient {
		ro = append(ro, option.WithHTTPClient(hc))
	}
	return openai.NewClient(ro...)
}
