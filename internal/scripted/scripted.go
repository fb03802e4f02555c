// Package scripted holds what the scripted model servers share
// (internal/agenttest for Chat Completions and Responses,
// internal/anthropictest for Messages): the log of requests
// received, a script answered in order, and the writing of JSON and of
// server-sent events the way the real APIs stream.
package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"unicode/utf8"
)

// Log is the requests a server received, in order. Safe for concurrent
// use; the zero value is empty and ready.
type Log[T any] struct {
	mu    sync.Mutex
	items []T
}

// Add appends v and returns how many requests the log holds with it: v is
// the n-th request, counted from 1.
func (l *Log[T]) Add(v T) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
	return len(l.items)
}

// All returns a copy of the requests so far.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.items...)
}

// Sequence returns a responder that answers the n-th request with
// replies[n-1] and every request past the end with exhausted. Safe for
// concurrent use.
func Sequence[Req, Rep any](replies []Rep, exhausted Rep) func(Req) Rep {
	var mu sync.Mutex
	next := 0
	return func(Req) Rep {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(replies) {
			return exhausted
		}
		next++
		return replies[next-1]
	}
}

// WriteJSON answers with v as application/json.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// WriteJSONStatus answers with status and v as application/json.
func WriteJSONStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// SSE writes a text/event-stream, flushing after each event.
type SSE struct {
	w http.ResponseWriter
	f http.Flusher
}

// StartSSE answers 200 with the headers of an event stream.
func StartSSE(w http.ResponseWriter) *SSE {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &SSE{w: w, f: f}
}

// Send writes one event: an event line when event is not empty, then data
// as JSON.
func (s *SSE) Send(event string, data any) {
	b, _ := json.Marshal(data)
	s.SendRaw(event, string(b))
}

// SendRaw writes one event whose data is line as it is (Chat
// Completions ends its stream with "data: [DONE]").
func (s *SSE) SendRaw(event, line string) {
	if event != "" {
		fmt.Fprintf(s.w, "event: %s\n", event)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", line)
	if s.f != nil {
		s.f.Flush()
	}
}

// Split cuts s into pieces of about size bytes (3 when size ≤ 0), never
// inside a rune: a delta is a JSON string, so servers only split between
// characters.
func Split(s string, size int) []string {
	if size <= 0 {
		size = 3
	}
	var out []string
	for len(s) > size {
		n := size
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// Usage is the token accounting a scripted server reports, in the fields
// of the agent package's Usage, which the kits cannot import.
type Usage struct {
	PromptTokens       int
	CachedPromptTokens int
	CacheWriteTokens   int
	CompletionTokens   int
	TotalTokens        int
}
