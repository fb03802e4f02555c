package upstream_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// Hostile url servers, as an attacker would write them: each is a real
// HTTP server on loopback, and the Hub must fail that server (alone) with
// an error that names it and what it did, without sending it secrets or
// reading without bound. Times are logged, never asserted.

// countingServer counts requests and keeps every header it saw.
type countingServer struct {
	*httptest.Server
	n       atomic.Int32
	secrets atomic.Int32 // requests carrying the configured secret
}

func newCountingServer(t *testing.T, secret string) *countingServer {
	c := &countingServer{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.n.Add(1)
		for _, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, secret) {
					c.secrets.Add(1)
				}
			}
		}
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	t.Cleanup(c.Close)
	return c
}

func hostileHub(t *testing.T, sc config.Server, opts *upstream.HubOptions) (upstream.ServerStatus, time.Duration) {
	t.Helper()
	if opts == nil {
		opts = &upstream.HubOptions{}
	}
	opts.MaxRestarts, opts.Store = -1, store.NewMemory()
	cfg := &config.Config{Servers: map[string]config.Server{"evil": sc}}
	start := time.Now()
	hub := startHub(t, cfg, opts, nil)
	took := time.Since(start)
	return statusOf(t, hub, "evil"), took
}

func TestHeadersStayAtTheServersOrigin(t *testing.T) {
	const secret = "s3cret-header-value"
	headers := map[string]string{"Authorization": "Bearer " + secret, "X-Api-Key": secret}
	for _, typ := range []string{"http", "sse", ""} {
		t.Run("redirect/"+typ, func(t *testing.T) {
			checkGoroutines(t)
			other := newCountingServer(t, secret)
			home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/steal?k=1", http.StatusTemporaryRedirect)
			}))
			defer home.Close()
			st, took := hostileHub(t, config.Server{URL: home.URL + "/mcp", Type: typ, Headers: headers}, nil)
			if st.State != upstream.StateFailed || !errors.Is(st.Err, upstream.ErrForeignOrigin) {
				t.Fatalf("state %s, error %v: want failed with ErrForeignOrigin", st.State, st.Err)
			}
			msg := st.Err.Error()
			if !strings.Contains(msg, `"evil"`) || !strings.Contains(msg, strings.TrimPrefix(other.URL, "http://")) || strings.Contains(msg, secret) {
				t.Errorf("error %q: want the server's name and the refused origin, no secret", msg)
			}
			if n := other.n.Load(); n != 0 {
				t.Errorf("the other origin got %d requests", n)
			}
			t.Logf("refused after %v: %v", took, st.Err)
		})
	}

	t.Run("sse endpoint event", func(t *testing.T) {
		checkGoroutines(t)
		other := newCountingServer(t, secret)
		home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: endpoint\ndata: %s/messages?session=1\n\n", other.URL)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		defer home.Close()
		defer home.CloseClientConnections()
		st, took := hostileHub(t, config.Server{URL: home.URL + "/sse", Type: "sse", Headers: headers}, nil)
		if st.State != upstream.StateFailed || !strings.Contains(fmt.Sprint(st.Err), upstream.ErrForeignOrigin.Error()) || !strings.Contains(fmt.Sprint(st.Err), `"evil"`) {
			t.Fatalf("state %s, error %v: want failed, refusing the other origin, naming the server", st.State, st.Err)
		}
		if n := other.n.Load(); n != 0 {
			t.Errorf("the endpoint on the other origin got %d requests (%d with the secret)", n, other.secrets.Load())
		}
		t.Logf("refused after %v: %v", took, st.Err)
	})

	t.Run("same origin redirect", func(t *testing.T) {
		// A redirect within the origin is followed, headers and all.
		checkGoroutines(t)
		srv := newBearerServer(t, secret)
		mux := http.NewServeMux()
		mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
		})
		mux.Handle("/", srv.Config.Handler)
		srv.Config.Handler = mux
		st, _ := hostileHub(t, config.Server{URL: srv.URL + "/old", Type: "http", Headers: headers}, nil)
		if st.State != upstream.StateReady {
			t.Fatalf("state %s, error %v", st.State, st.Err)
		}
	})
}

func TestBoundedResponses(t *testing.T) {
	const limit = 1 << 20
	chunk := strings.Repeat("x", 32<<10)
	for _, tc := range []struct {
		name, contentType, prefix, want string
	}{
		{"json body", "application/json", `{"jsonrpc":"2.0","id":1,"result":{"x":"`, "response body over 1048576 bytes"},
		// The SDK says it, with the same limit.
		{"sse event", "text/event-stream", "event: message\ndata: ", "SSE event exceeded 1048576 bytes"},
		// The SDK reads an error's body for a JSON-RPC error and ignores
		// a read error: the status is what is left to say.
		{"error body", "application/json", "", "Bad Request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			var sent atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					http.Error(w, "no", http.StatusMethodNotAllowed)
					return
				}
				w.Header().Set("Content-Type", tc.contentType)
				if tc.name == "error body" {
					w.WriteHeader(http.StatusBadRequest)
				}
				io.WriteString(w, tc.prefix)
				for r.Context().Err() == nil && sent.Load() < 1<<30 {
					n, err := io.WriteString(w, chunk)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			defer srv.CloseClientConnections()
			st, took := hostileHub(t, config.Server{URL: srv.URL + "/mcp", Type: "http"}, &upstream.HubOptions{MaxMessageBytes: limit, Timeout: waitLimit()})
			if st.State != upstream.StateFailed || !strings.Contains(fmt.Sprint(st.Err), tc.want) || !strings.Contains(fmt.Sprint(st.Err), "server evil") {
				t.Fatalf("state %s, error %v: want failed naming the server and %q", st.State, st.Err, tc.want)
			}
			if n := sent.Load(); n > 32<<20 {
				t.Errorf("the server got %d MiB out before the client stopped reading", n>>20)
			}
			t.Logf("failed after %v, %d MiB sent: %v", took, sent.Load()>>20, st.Err)
		})
	}
}
