package provider_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/provider"
)

func TestResolve(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name    string
		opts    provider.Options
		env     map[string]string
		want    provider.Options
		wantErr bool
	}{
		{"environment", provider.Options{}, map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1", "OPENAI_API_KEY": "k"},
			provider.Options{BaseURL: "http://localhost:11434/v1", APIKey: "k", MaxRetries: provider.DefaultMaxRetries}, false},
		{"fields win", provider.Options{BaseURL: "http://vllm:8000/v1", APIKey: "mine", MaxRetries: 1}, map[string]string{"OPENAI_BASE_URL": "http://other/v1", "OPENAI_API_KEY": "env"},
			provider.Options{BaseURL: "http://vllm:8000/v1", APIKey: "mine", MaxRetries: 1}, false},
		{"local server needs no key", provider.Options{BaseURL: "http://127.0.0.1:8080/v1"}, nil,
			provider.Options{BaseURL: "http://127.0.0.1:8080/v1", MaxRetries: provider.DefaultMaxRetries}, false},
		{"no retries, no reply limits", provider.Options{BaseURL: "http://x/v1", MaxRetries: -1, MaxReplyBytes: -1, ReplyTimeout: -1, ReplyIdleTimeout: -1}, nil, provider.Options{BaseURL: "http://x/v1"}, false},
		{"reply limits kept", provider.Options{BaseURL: "http://x/v1", MaxReplyBytes: 5, ReplyTimeout: time.Second, ReplyIdleTimeout: time.Millisecond}, nil,
			provider.Options{BaseURL: "http://x/v1", MaxRetries: provider.DefaultMaxRetries, MaxReplyBytes: 5, ReplyTimeout: time.Second, ReplyIdleTimeout: time.Millisecond}, false},
		{"openai without a key", provider.Options{}, nil, provider.Options{}, true},
		{"not http", provider.Options{BaseURL: "localhost:11434"}, nil, provider.Options{}, true},
	}
	limits := provider.Options{MaxReplyBytes: provider.DefaultMaxReplyBytes, ReplyTimeout: provider.DefaultReplyTimeout, ReplyIdleTimeout: provider.DefaultReplyIdleTimeout}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want.MaxReplyBytes == 0 && tt.opts.MaxReplyBytes == 0 {
				tt.want.MaxReplyBytes, tt.want.ReplyTimeout, tt.want.ReplyIdleTimeout = limits.MaxReplyBytes, limits.ReplyTimeout, limits.ReplyIdleTimeout
			}
			got, err := tt.opts.Resolve(env(tt.env))
			if tt.wantErr {
				if !errors.Is(err, provider.ErrOptions) {
					t.Fatalf("err = %v, want ErrOptions", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveRedacts: a bad base URL is named without its secrets (the
// rule is internal/redact's).
func TestResolveRedacts(t *testing.T) {
	_, err := provider.Options{BaseURL: "ftp://u:secret@h/?key=s3cret"}.Resolve(func(string) string { return "" })
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "secret@") {
		t.Errorf("error leaks the URL's secrets: %v", err)
	}
}
