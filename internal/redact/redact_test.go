package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/redact"
)

func TestURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://example.com/mcp", "https://example.com/mcp"},
		{"https://example.com/mcp?api_key=sk-live-1234&region=eu", "https://example.com/mcp?api_key=REDACTED&region=REDACTED"},
		{"https://user:hunter2@example.com/mcp", "https://REDACTED@example.com/mcp"},
		{"https://tok3nvalue@example.com/mcp", "https://REDACTED@example.com/mcp"},
		{"https://example.com/key/abc123/sse", "https://example.com/key/REDACTED/sse"},
		{"https://example.com/v1/3f9a8b7c6d5e4f3a2b1c/mcp", "https://example.com/v1/REDACTED/mcp"},
		{"https://example.com/servers/github-enterprise/mcp", "https://example.com/servers/github-enterprise/mcp"},
		{"http://localhost:8080/sse#token=xyz", "http://localhost:8080/sse#REDACTED"},
		// provider's former rule: userinfo and every query value.
		{"https://user:pw@example.com/v1?api_key=s3cret&x=1", "https://REDACTED@example.com/v1?api_key=REDACTED&x=REDACTED"},
		// Unparsable: only the scheme and host stay.
		{"https://exa mple.com/%zz?api_key=secret", "https://exa mple.com/REDACTED"},
		{"https://exa mple.com/key/abc123/%zz", "https://exa mple.com/REDACTED"},
		{"http://bob:hunter2@host:port-is-not-a-number/x?k=secret", "http://host:port-is-not-a-number/REDACTED"},
		{"http://host:bad", "http://host:bad"},
		{"not a url %zz secret", "REDACTED"},
		{"://secret", "REDACTED"},
	} {
		if got := redact.URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestScrubber(t *testing.T) {
	s := redact.NewScrubber([]string{
		"https://example.com/mcp?api_key=sk-live-0123456789",
		"http://bob:hunter2secret@host.example/key/pathtoken42/sse",
		"",
	})
	secrets := []string{"sk-live-0123456789", "hunter2secret", "pathtoken42"}
	for _, tt := range []struct{ in, want string }{
		{`Get "https://example.com/mcp?api_key=sk-live-0123456789": refused`, `Get "https://example.com/mcp?api_key=REDACTED": refused`},
		{"key sk-live-0123456789 and sk-live-0123456789%20", "key REDACTED and REDACTED%20"},
		// net/http prints URLs with the password stripped.
		{"http://bob:***@host.example/key/pathtoken42/sse", "http://REDACTED@host.example/key/REDACTED/sse"},
		{"nothing secret here", "nothing secret here"},
	} {
		if got := s.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}

	err := fmt.Errorf("dial https://example.com/mcp?api_key=sk-live-0123456789: %w", fs.ErrNotExist)
	clean := s.Err(err)
	if strings.Contains(clean.Error(), "sk-live") || !errors.Is(clean, fs.ErrNotExist) {
		t.Errorf("Err = %q (errors.Is %v), want scrubbed and still fs.ErrNotExist", clean, errors.Is(clean, fs.ErrNotExist))
	}
	if s.Err(nil) != nil {
		t.Error("Err(nil) != nil")
	}
	plain := errors.New("no secret")
	if s.Err(plain) != plain {
		t.Error("Err changed an error without secrets")
	}

	var logs bytes.Buffer
	log := slog.New(s.Handler(slog.NewTextHandler(&logs, nil))).With("url", "https://example.com/mcp?api_key=sk-live-0123456789")
	log.WithGroup("g").Info("connect to http://bob:hunter2secret@host.example/key/pathtoken42/sse",
		"error", err, "part", "pathtoken42", slog.Group("inner", "v", "hunter2secret"), "n", 42)
	for _, secret := range secrets {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log holds %q: %s", secret, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "host.example") || !strings.Contains(logs.String(), "n=42") {
		t.Errorf("log lost what is not secret: %s", logs.String())
	}

	var nilScrubber *redact.Scrubber
	if got := nilScrubber.String("x"); got != "x" {
		t.Errorf("nil Scrubber: String = %q", got)
	}
}
