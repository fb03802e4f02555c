package provider_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// embeddingsServer speaks POST /v1/embeddings like the OpenAI API. Its
// vectors are [len(text), index of the text in the request, 1, ...] padded
// to dim, listed in reverse order (clients must order by "index"), as JSON
// floats or base64 little-endian float32 depending on encoding_format.
// Before answering, it asks fail (when set) for a status to reply instead.
type embeddingsServer struct {
	t    *testing.T
	dim  int
	fail func(n int, w http.ResponseWriter) bool // n counts requests from 1

	mu       sync.Mutex
	requests []embeddingsRequest
	headers  []http.Header
}

type embeddingsRequest struct {
	Input          []string `json:"input"`
	Model          string   `json:"model"`
	Dimensions     int      `json:"dimensions,omitempty"`
	EncodingFormat string   `json:"encoding_format,omitempty"`
}

func (s *embeddingsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req embeddingsRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.t.Errorf("request body: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.headers = append(s.headers, r.Header.Clone())
	n := len(s.requests)
	s.mu.Unlock()
	if s.fail != nil && s.fail(n, w) {
		return
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	var data []item
	for i := len(req.Input) - 1; i >= 0; i-- {
		v := make([]float32, s.dim)
		v[0], v[1] = float32(len(req.Input[i])), float32(i)
		for j := 2; j < s.dim; j++ {
			v[j] = 1
		}
		var emb any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			emb = base64.StdEncoding.EncodeToString(b)
		}
		data = append(data, item{"embedding", i, emb})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model,
		"usage":  map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)},
	})
}

func (s *embeddingsServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func apiError(w http.ResponseWriter, status int, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":"status %d","type":"test_error","param":null,"code":null}}`, status)
}

func newEmbeddingsServer(t *testing.T, dim int) (*embeddingsServer, *httptest.Server) {
	s := &embeddingsServer{t: t, dim: dim}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func TestEmbedderBatchesAndOrders(t *testing.T) {
	for _, format := range []string{"", "float"} {
		t.Run("encoding "+format, func(t *testing.T) {
			s, srv := newEmbeddingsServer(t, 4)
			emb, err := provider.NewEmbedder("nomic-embed-text", &provider.EmbedderOptions{
				Options:        provider.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test"},
				BatchSize:      2,
				EncodingFormat: format,
			})
			if err != nil {
				t.Fatal(err)
			}
			texts := []string{"a", "bb", "ccc", "", "eeeee"}
			vecs, err := emb.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			want := [][]float32{{1, 0, 1, 1}, {2, 1, 1, 1}, {3, 0, 1, 1}, {1, 1, 1, 1}, {5, 0, 1, 1}}
			if diff := cmp.Diff(want, vecs); diff != "" {
				t.Errorf("vectors (-want +got):\n%s", diff)
			}
			wantFormat := "base64"
			if format == "float" {
				wantFormat = "float"
			}
			wantReqs := []embeddingsRequest{
				{Input: []string{"a", "bb"}, Model: "nomic-embed-text", EncodingFormat: wantFormat},
				{Input: []string{"ccc", " "}, Model: "nomic-embed-text", EncodingFormat: wantFormat},
				{Input: []string{"eeeee"}, Model: "nomic-embed-text", EncodingFormat: wantFormat},
			}
			if diff := cmp.Diff(wantReqs, s.requests); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if got := s.headers[0].Get("Authorization"); got != "Bearer sk-test" {
				t.Errorf("Authorization = %q", got)
			}
		})
	}
}

func TestEmbedderID(t *testing.T) {
	tests := []struct {
		model string
		opts  *provider.EmbedderOptions
		want  string
	}{
		{"text-embedding-3-small", &provider.EmbedderOptions{Options: provider.Options{APIKey: "sk"}}, "openai:text-embedding-3-small@api.openai.com"},
		{"text-embedding-3-small", &provider.EmbedderOptions{Options: provider.Options{APIKey: "sk"}, Dimensions: 512}, "openai:text-embedding-3-small:512@api.openai.com"},
		{"nomic-embed-text", &provider.EmbedderOptions{Options: provider.Options{BaseURL: "http://localhost:11434/v1"}}, "openai:nomic-embed-text@localhost:11434"},
	}
	for _, tt := range tests {
		emb, err := provider.NewEmbedder(tt.model, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if emb.ID() != tt.want {
			t.Errorf("ID = %q, want %q", emb.ID(), tt.want)
		}
	}
	local := provider.Options{BaseURL: "http://localhost:11434/v1"}
	for _, tt := range []struct {
		model string
		opts  *provider.EmbedderOptions
		want  string // in the error
	}{
		{"m", &provider.EmbedderOptions{Options: provider.Options{BaseURL: "localhost:11434"}}, "not an http(s) URL"},
		{"m", &provider.EmbedderOptions{Options: provider.Options{BaseURL: "ftp://x/v1"}}, "not an http(s) URL"},
		{"m", &provider.EmbedderOptions{Options: local, Dimensions: -1}, "Dimensions = -1"},
		{"m", &provider.EmbedderOptions{Options: local, EncodingFormat: "hex"}, `EncodingFormat "hex"`},
		{"", &provider.EmbedderOptions{Options: local}, "empty model name"},
	} {
		_, err := provider.NewEmbedder(tt.model, tt.opts)
		if !errors.Is(err, provider.ErrOptions) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewEmbedder(%q, %+v) = %v, want ErrOptions saying %q", tt.model, tt.opts, err, tt.want)
		}
	}
	if _, err := provider.NewEmbedder("m", &provider.EmbedderOptions{Options: local, Dimensions: -1}); !errors.Is(err, toolindex.ErrDimension) {
		t.Errorf("Dimensions -1: %v, want ErrDimension too", err)
	}
}

func TestEmbedderErrors(t *testing.T) {
	tests := []struct {
		name       string
		opts       provider.EmbedderOptions
		dim        int
		fail       func(n int, w http.ResponseWriter) bool
		wantErr    error // errors.Is target; nil means success
		wantStatus int   // *openai.Error status, when non-zero
		wantReqs   int
	}{
		{
			name: "429 then 200",
			dim:  3,
			fail: func(n int, w http.ResponseWriter) bool {
				if n == 1 {
					apiError(w, http.StatusTooManyRequests, "0")
					return true
				}
				return false
			},
			wantReqs: 2,
		},
		{
			name: "500 until retries run out",
			opts: provider.EmbedderOptions{Options: provider.Options{MaxRetries: 2}},
			dim:  3,
			fail: func(n int, w http.ResponseWriter) bool {
				w.Header().Set("Retry-After-Ms", "1")
				apiError(w, http.StatusInternalServerError, "")
				return true
			},
			wantStatus: 500,
			wantReqs:   3,
		},
		{
			name: "no retry",
			opts: provider.EmbedderOptions{Options: provider.Options{MaxRetries: -1}},
			dim:  3,
			fail: func(n int, w http.ResponseWriter) bool {
				apiError(w, http.StatusServiceUnavailable, "0")
				return true
			},
			wantStatus: 503,
			wantReqs:   1,
		},
		{
			name: "Retry-After beyond MaxRetryDelay fails at once",
			opts: provider.EmbedderOptions{Options: provider.Options{MaxRetryDelay: 1e9}},
			dim:  3,
			fail: func(n int, w http.ResponseWriter) bool {
				apiError(w, http.StatusTooManyRequests, "3600")
				return true
			},
			wantStatus: 429,
			wantReqs:   1,
		},
		{
			name: "400 is not retried",
			dim:  3,
			fail: func(n int, w http.ResponseWriter) bool {
				apiError(w, http.StatusBadRequest, "")
				return true
			},
			wantStatus: 400,
			wantReqs:   1,
		},
		{
			name:     "wrong dimension",
			opts:     provider.EmbedderOptions{Dimensions: 4},
			dim:      3,
			wantErr:  toolindex.ErrDimension,
			wantReqs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv := newEmbeddingsServer(t, tt.dim)
			s.fail = tt.fail
			tt.opts.BaseURL = srv.URL + "/v1"
			emb, err := provider.NewEmbedder("m", &tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			vecs, err := emb.Embed(context.Background(), []string{"x", "y"})
			switch {
			case tt.wantStatus != 0:
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.wantStatus {
					t.Errorf("error = %v, want an *openai.Error with status %d", err, tt.wantStatus)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("error = %v, want %v", err, tt.wantErr)
				}
			default:
				if err != nil || len(vecs) != 2 {
					t.Errorf("Embed = %v, %v; want 2 vectors", vecs, err)
				}
			}
			if err != nil && !strings.Contains(err.Error(), emb.ID()) {
				t.Errorf("error %q does not name the embedder", err)
			}
			if got := s.count(); got != tt.wantReqs {
				t.Errorf("%d requests, want %d", got, tt.wantReqs)
			}
		})
	}
}

func TestEmbedderDimensionsSent(t *testing.T) {
	s, srv := newEmbeddingsServer(t, 8)
	emb, err := provider.NewEmbedder("text-embedding-3-small", &provider.EmbedderOptions{Options: provider.Options{BaseURL: srv.URL + "/v1"}, Dimensions: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := emb.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if s.requests[0].Dimensions != 8 {
		t.Errorf("request dimensions = %d, want 8", s.requests[0].Dimensions)
	}
	if got := s.headers[0].Get("Authorization"); got != "" && !strings.HasPrefix(got, "Bearer ") {
		t.Errorf("Authorization = %q", got)
	}
	// A server that changes its dimension between calls is caught too.
	s2, srv2 := newEmbeddingsServer(t, 3)
	emb2, err := provider.NewEmbedder("m", &provider.EmbedderOptions{Options: provider.Options{BaseURL: srv2.URL + "/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := emb2.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	s2.mu.Lock()
	s2.dim = 5
	s2.mu.Unlock()
	if _, err := emb2.Embed(context.Background(), []string{"x"}); !errors.Is(err, toolindex.ErrDimension) {
		t.Errorf("dimension change: error = %v, want ErrDimension", err)
	}
}

func TestEmbedderContext(t *testing.T) {
	t.Run("cancel during request", func(t *testing.T) {
		arrived, stop := make(chan struct{}), make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // lets the server notice the client leaving
			close(arrived)
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}))
		defer srv.Close()
		defer close(stop)
		emb, err := provider.NewEmbedder("m", &provider.EmbedderOptions{Options: provider.Options{BaseURL: srv.URL + "/v1"}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-arrived; cancel() }()
		if _, err := emb.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
	})
	t.Run("cancel while waiting to retry", func(t *testing.T) {
		s, srv := newEmbeddingsServer(t, 3)
		ctx, cancel := context.WithCancel(context.Background())
		s.fail = func(n int, w http.ResponseWriter) bool {
			apiError(w, http.StatusTooManyRequests, "60")
			cancel() // the client is about to wait 60 s; the cancel must end it
			return true
		}
		emb, err := provider.NewEmbedder("m", &provider.EmbedderOptions{Options: provider.Options{BaseURL: srv.URL + "/v1"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := emb.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
		if s.count() != 1 {
			t.Errorf("%d requests, want 1", s.count())
		}
	})
}

// TestEmbedderInIndex builds an Index on the OpenAI embedder and
// checks that it sends one request per batch.
func TestEmbedderInIndex(t *testing.T) {
	s, srv := newEmbeddingsServer(t, 4)
	emb, err := provider.NewEmbedder("m", &provider.EmbedderOptions{Options: provider.Options{BaseURL: srv.URL + "/v1"}, BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	var tools []tool.Tool
	for i := range 6 {
		tools = append(tools, tool.Tool{Name: fmt.Sprintf("t%d", i), Description: fmt.Sprintf("Tool number %d.", i)})
	}
	ix := testenv.Index(t, emb, &toolindex.Options{BatchSize: 100}, tools...)
	if ix.Len() != len(tools) || s.count() != 2 {
		t.Errorf("Len = %d with %d requests, want %d tools in 2 requests", ix.Len(), s.count(), len(tools))
	}
}

// TestEmbedderEnvironment: the embedder follows provider's one rule,
// the chat model's: OPENAI_BASE_URL and OPENAI_API_KEY when unset (it used
// to ignore OPENAI_BASE_URL). The index takes its batch size.
func TestEmbedderEnvironment(t *testing.T) {
	s, srv := newEmbeddingsServer(t, 4)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	emb, err := provider.NewEmbedder("nomic-embed-text", &provider.EmbedderOptions{BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := toolindex.New(emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tools []tool.Tool
	for i := range 7 {
		tools = append(tools, tool.Tool{Name: fmt.Sprintf("t%d", i), Description: "A tool."})
	}
	st, err := ix.Upsert(context.Background(), tools...)
	if err != nil {
		t.Fatal(err)
	}
	if st.Batches != 3 || s.count() != 3 {
		t.Errorf("%d batches, %d requests; want 3 of at most 3 texts (the embedder's BatchSize)", st.Batches, s.count())
	}
	if got := s.headers[0].Get("Authorization"); got != "Bearer sk-env" {
		t.Errorf("Authorization = %q, want the environment's key", got)
	}
}
