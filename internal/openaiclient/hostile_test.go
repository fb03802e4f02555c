package openaiclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsift/toolsift/internal/httpbound"
	"github.com/toolsift/toolsift/internal/openaiclient"
	"github.com/toolsift/toolsift/internal/testenv"
)

// hostileModel is a model API server written for issue 35: it answers
// every request by calling reply, and counts the bytes it got written.
type hostileModel struct {
	*httptest.Server
	written atomic.Int64
}

func newHostileModel(t *testing.T, reply func(w http.ResponseWriter, write func(string) bool)) *hostileModel {
	h := &hostileModel{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		write := func(s string) bool {
			n, err := w.Write([]byte(s))
			h.written.Add(int64(n))
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			return err == nil && r.Context().Err() == nil
		}
		reply(w, write)
	}))
	t.Cleanup(h.Close)
	return h
}

var chunk = strings.Repeat("a", 64<<10)

// endless behaviours: a JSON body that never ends, one server-sent event
// that never ends, and a stream of small events that never ends.
var endless = map[string]func(w http.ResponseWriter, write func(string) bool){
	"huge JSON body": func(w http.ResponseWriter, write func(string) bool) {
		w.Header().Set("Content-Type", "application/json")
		write(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)
		for write(chunk) {
		}
	},
	"one huge event": func(w http.ResponseWriter, write func(string) bool) {
		w.Header().Set("Content-Type", "text/event-stream")
		write(`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`)
		for write(chunk) {
		}
	},
	"endless stream": func(w http.ResponseWriter, write func(string) bool) {
		w.Header().Set("Content-Type", "text/event-stream")
		ev := `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("b", 4000) + `"}}]}` + "\n\n"
		for write(ev) {
		}
	},
}

// TestRepliesBounded: a Chat Completions or Responses reply that never
// ends (one body, one event or a stream of events) fails once it passes
// MaxReplyBytes, with an error naming the limit, and the client reads no
// further (issue 35 item 3: 1.6 GB bodies and 1 GB events filled memory,
// an endless stream grew 392 MB in 70 s).
func TestRepliesBounded(t *testing.T) {
	const limit = 1 << 20
	for name, reply := range endless {
		for _, api := range []string{"chat", "responses"} {
			t.Run(name+"/"+api, func(t *testing.T) {
				srv := newHostileModel(t, reply)
				c := openaiclient.New(openaiclient.Endpoint{BaseURL: srv.URL + "/v1", MaxReplyBytes: limit})
				err := callModel(t.Context(), c, api, name != "huge JSON body")
				if !errors.Is(err, httpbound.ErrRefused) || !strings.Contains(err.Error(), fmt.Sprintf("body over %d bytes (provider.Options.MaxReplyBytes", limit)) {
					t.Fatalf("error %v, want the reply refused naming MaxReplyBytes", err)
				}
				srv.CloseClientConnections()
				if w := srv.written.Load(); w > 8*limit {
					t.Errorf("the server wrote %d bytes before the client stopped reading", w)
				}
			})
		}
	}
}

// TestRepliesTimed: a reply that stalls after its first event fails after
// ReplyIdleTimeout; one that trickles forever after ReplyTimeout; each
// error names its option. The server and the client are net/http's, over
// an in-memory connection in a synctest bubble: the timeouts pass on its
// fake clock, so each error comes exactly when its limit is reached, on a
// loaded machine too.
func TestRepliesTimed(t *testing.T) {
	stall := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // nothing more, until the client hangs up
	}
	trickle := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}
	for _, tt := range []struct {
		name  string
		reply http.HandlerFunc
		e     openaiclient.Endpoint
		after time.Duration
		want  string
	}{
		{"stall", stall, openaiclient.Endpoint{ReplyIdleTimeout: 300 * time.Millisecond}, 300 * time.Millisecond, "no bytes for 300ms in the middle of a reply (provider.Options.ReplyIdleTimeout)"},
		{"trickle", trickle, openaiclient.Endpoint{ReplyTimeout: 500 * time.Millisecond, ReplyIdleTimeout: time.Hour}, 500 * time.Millisecond, "no whole reply within 500ms (provider.Options.ReplyTimeout)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := tt.e
				e.BaseURL, e.HTTPClient = "http://model.test/v1", testenv.PipeServer(t, tt.reply)
				start := time.Now()
				err := callModel(context.Background(), openaiclient.New(e), "chat", true)
				if !errors.Is(err, httpbound.ErrRefused) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				if took := time.Since(start); took != tt.after {
					t.Errorf("failed after %v, want %v", took, tt.after)
				}
			})
		})
	}
}

// callModel makes one request and reads the whole reply.
func callModel(ctx context.Context, c openai.Client, api string, stream bool) error {
	switch {
	case api == "chat" && !stream:
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		return err
	case api == "chat":
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		defer s.Close()
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		return s.Err()
	case !stream:
		_, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		return err
	default:
		s := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		defer s.Close()
		for s.Next() {
		}
		return s.Err()
	}
}
