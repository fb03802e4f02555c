package openaiclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/toolsift/toolsift/internal/openaiclient"
)

// TestNew: the client sends to e.BaseURL with e.APIKey (none when empty),
// whatever $OPENAI_BASE_URL and $OPENAI_API_KEY say, and retries
// e.MaxRetries times.
func TestNew(t *testing.T) {
	var (
		mu    sync.Mutex
		auths []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, `{"error":{"message":"down"}}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1") // nothing listens there
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")

	tests := []struct {
		name     string
		e        openaiclient.Endpoint
		wantAuth string
		wantReqs int
	}{
		{"no key, no retries", openaiclient.Endpoint{BaseURL: srv.URL + "/v1"}, "", 1},
		{"key, two retries", openaiclient.Endpoint{BaseURL: srv.URL + "/v1", APIKey: "sk-mine", MaxRetries: 2, MaxRetryDelay: 1}, "Bearer sk-mine", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			auths = nil
			mu.Unlock()
			c := openaiclient.New(tt.e)
			_, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
				Model: "m", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"x"}}})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError {
				t.Fatalf("error = %v, want the test server's 500", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(auths) != tt.wantReqs {
				t.Errorf("%d requests, want %d", len(auths), tt.wantReqs)
			}
			for _, a := range auths {
				if a != tt.wantAuth {
					t.Errorf("Authorization = %q, want %q", a, tt.wantAuth)
				}
			}
		})
	}
}
