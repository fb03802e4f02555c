package budget_test

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/budget"
)

// mustTokenizer returns a tokenizer for encoding or fails the test.
func mustTokenizer(t testing.TB, encoding string) *budget.Tokenizer {
	t.Helper()
	tok, err := budget.NewTokenizer("", encoding)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Token ids as published by OpenAI's tiktoken (openai-cookbook "How to count
// tokens with tiktoken" and tiktoken's README) for cl100k_base, and as
// tiktoken 0.7+ gives for o200k_base.
func TestGoldenTokens(t *testing.T) {
	tests := []struct {
		encoding, text string
		want           []int
	}{
		{"cl100k_base", "hello world", []int{15339, 1917}},
		{"cl100k_base", "tiktoken is great!", []int{83, 1609, 5963, 374, 2294, 0}},
		{"cl100k_base", "2 + 2 = 4", []int{17, 489, 220, 17, 284, 220, 19}},
		{"cl100k_base", "お誕生日おめでとう", []int{33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699}},
		{"cl100k_base", "antidisestablishmentarianism", []int{519, 85342, 34500, 479, 8997, 2191}},
		{"o200k_base", "hello world", []int{24912, 2375}},
		{"o200k_base", "tiktoken is great!", []int{83, 8251, 2488, 382, 2212, 0}},
		{"o200k_base", "2 + 2 = 4", []int{17, 659, 220, 17, 314, 220, 19}},
		{"o200k_base", "お誕生日おめでとう", []int{8930, 9697, 243, 128225, 8930, 17693, 4344, 48669}},
		// Special-token text is ordinary text in message content.
		{"o200k_base", "<|endoftext|>", []int{27, 91, 419, 1440, 919, 91, 29}},
	}
	for _, tt := range tests {
		t.Run(tt.encoding+"/"+tt.text, func(t *testing.T) {
			tok := mustTokenizer(t, tt.encoding)
			if diff := cmp.Diff(tt.want, tok.Encode(tt.text)); diff != "" {
				t.Errorf("tokens (-want +got):\n%s", diff)
			}
			if got := tok.Count(tt.text); got != len(tt.want) {
				t.Errorf("Count = %d, want %d", got, len(tt.want))
			}
		})
	}
}

func TestEncodingForModel(t *testing.T) {
	tests := []struct {
		model string
		want  string
		known bool
	}{
		{"gpt-4o", "o200k_base", true},
		{"gpt-4o-mini-2024-07-18", "o200k_base", true},
		{"chatgpt-4o-latest", "o200k_base", true},
		{"gpt-4.1-nano", "o200k_base", true},
		{"gpt-4.5-preview", "o200k_base", true},
		{"gpt-5", "o200k_base", true},
		{"gpt-5.1-codex", "o200k_base", true},
		{"gpt-5-mini", "o200k_base", true},
		{"o1", "o200k_base", true},
		{"o3-mini", "o200k_base", true},
		{"o4-mini-2025-04-16", "o200k_base", true},
		{"openai/gpt-4o", "o200k_base", true},
		{"GPT-4O", "o200k_base", true},
		{"gpt-4", "cl100k_base", true},
		{"gpt-4-turbo-2024-04-09", "cl100k_base", true},
		{"gpt-4-32k", "cl100k_base", true},
		{"gpt-3.5-turbo-0125", "cl100k_base", true},
		{"text-embedding-3-small", "cl100k_base", true},
		{"text-embedding-ada-002", "cl100k_base", true},
		{"text-davinci-003", "p50k_base", true},
		{"davinci", "r50k_base", true},
		{"llama3.2", "o200k_base", false},
		{"", "o200k_base", false},
		{"o1x", "o200k_base", false},
	}
	for _, tt := range tests {
		enc, known := budget.EncodingForModel(tt.model)
		if enc != tt.want || known != tt.known {
			t.Errorf("EncodingForModel(%q) = %q, %v; want %q, %v", tt.model, enc, known, tt.want, tt.known)
		}
	}
}

func TestNewTokenizer(t *testing.T) {
	tests := []struct {
		model, encoding string
		want            string
		err             error
	}{
		{"gpt-4o", "", "o200k_base", nil},
		{"gpt-4", "", "cl100k_base", nil},
		{"unknown-model", "", "o200k_base", nil},
		{"gpt-4o", "cl100k_base", "cl100k_base", nil}, // the explicit encoding wins
		{"", "p50k_base", "p50k_base", nil},
		{"gpt-4o", "gpt2", "", budget.ErrUnknownEncoding},
		{"", "o300k_base", "", budget.ErrUnknownEncoding},
	}
	for _, tt := range tests {
		tok, err := budget.NewTokenizer(tt.model, tt.encoding)
		if !errors.Is(err, tt.err) {
			t.Errorf("NewTokenizer(%q, %q) error = %v, want %v", tt.model, tt.encoding, err, tt.err)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), tt.encoding) {
				t.Errorf("error %q does not name the encoding %q", err, tt.encoding)
			}
			continue
		}
		if tok.Encoding() != tt.want {
			t.Errorf("NewTokenizer(%q, %q).Encoding() = %q, want %q", tt.model, tt.encoding, tok.Encoding(), tt.want)
		}
	}
}

// failingTransport fails every request and remembers that one was made.
type failingTransport struct {
	mu   sync.Mutex
	urls []string
}

func (f *failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.urls = append(f.urls, r.URL.String())
	f.mu.Unlock()
	return nil, errors.New("network disabled by test")
}

// TestOffline loads every encoding with the network unusable: proxies that
// do not exist and a default transport that fails (and records) every
// request. tiktoken-go's default loader would download the tables from
// openaipublic.blob.core.windows.net and fail here. It runs in a fresh
// process (this test binary again), so no earlier test has loaded an
// encoding already.
func TestOffline(t *testing.T) {
	if os.Getenv("BUDGET_OFFLINE_CHILD") == "1" {
		offlineChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOffline$", "-test.v")
	cmd.Env = append(os.Environ(),
		"BUDGET_OFFLINE_CHILD=1",
		"HTTP_PROXY=http://127.0.0.1:1", "HTTPS_PROXY=http://127.0.0.1:1",
		"http_proxy=http://127.0.0.1:1", "https_proxy=http://127.0.0.1:1",
		"TIKTOKEN_CACHE_DIR="+t.TempDir(), // no cached download to fall back on
	)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "offline: counted with") {
		t.Fatalf("offline child: %v\n%s", err, out)
	}
}

func offlineChild(t *testing.T) {
	ft := &failingTransport{}
	http.DefaultTransport = ft
	for _, enc := range budget.Encodings() {
		tok, err := budget.NewTokenizer("", enc)
		if err != nil {
			t.Fatalf("NewTokenizer(%s) offline: %v", enc, err)
		}
		if n := tok.Count("hello world"); n != 2 {
			t.Errorf("%s: Count(hello world) = %d, want 2", enc, n)
		}
	}
	if len(ft.urls) > 0 {
		t.Fatalf("requests made: %v", ft.urls)
	}
	t.Logf("offline: counted with %v and no request", budget.Encodings())
}

func TestConcurrentCount(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	texts := []string{"hello world", strings.Repeat("concurrency is not parallelism. ", 50), "お誕生日おめでとう"}
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = tok.Count(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				k := (g + i) % len(texts)
				if got := tok.Count(texts[k]); got != want[k] {
					errs <- texts[k]
				}
				if _, err := tok.CountTool(exampleTool(), budget.Tier(i%budget.NumTiers)); err != nil {
					errs <- err.Error()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent mismatch: %q", e)
	}
}
