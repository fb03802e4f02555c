package upstream_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// TestURLSecretsNotInErrors: a server that cannot be reached reports its
// failure without the credentials in its URL, in Status, Call's errors and
// the logs, the SDK's included.
func TestURLSecretsNotInErrors(t *testing.T) {
	checkGoroutines(t)
	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	secrets := []string{"sk-live-0123456789", "pathtoken42", "hunter2secret", "bob"}
	cfg := &config.Config{Servers: map[string]config.Server{
		"query": {URL: "http://" + addr + "/mcp?api_key=sk-live-0123456789"},
		"path":  {URL: "http://" + addr + "/key/pathtoken42/mcp", Type: "sse"},
		"user":  {URL: "http://bob:hunter2secret@" + addr + "/mcp", Type: "http"},
	}}
	var logs bytes.Buffer
	hub := startHub(t, cfg, &upstream.HubOptions{
		Timeout:    5 * time.Second,
		HTTPClient: &http.Client{},
		Logger:     slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}, nil)
	var texts []string
	for _, st := range hub.Status() {
		if st.Err == nil {
			t.Errorf("%s: no error", st.Name)
			continue
		}
		texts = append(texts, st.Err.Error())
		if !strings.Contains(st.Err.Error(), addr) {
			t.Errorf("%s: error %q does not say which host", st.Name, st.Err)
		}
	}
	_, err = hub.Call(context.Background(), "query__anything", nil)
	texts = append(texts, err.Error(), logs.String())
	for _, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("secret %q in %q", s, text)
			}
		}
	}
	t.Logf("errors: %q", texts[:3])
}

func TestConfigErrorRedactsURL(t *testing.T) {
	_, err := upstream.NewHub(&config.Config{Servers: map[string]config.Server{
		"bad": {URL: "http://host:port-is-not-a-number/?api_key=sk-live-0123456789"},
	}}, nil)
	if err == nil || strings.Contains(err.Error(), "sk-live-0123456789") {
		t.Errorf("NewHub error = %v, want one without the key", err)
	}
}
