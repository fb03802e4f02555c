package scripted

import (
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestLog(t *testing.T) {
	var l Log[int]
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { l.Add(i) })
	}
	wg.Wait()
	got := l.All()
	slices.Sort(got)
	if len(got) != 50 || got[0] != 0 || got[49] != 49 {
		t.Fatalf("All = %v, want 0..49", got)
	}
	if n := l.Add(7); n != 51 {
		t.Errorf("Add = %d, want 51", n)
	}
	got[0] = -1
	if l.All()[0] == -1 {
		t.Error("All shares its slice with the log")
	}
}

func TestSequence(t *testing.T) {
	next := Sequence[string]([]string{"a", "b"}, "exhausted")
	var got []string
	for range 4 {
		got = append(got, next("req"))
	}
	if want := []string{"a", "b", "exhausted", "exhausted"}; !slices.Equal(got, want) {
		t.Errorf("replies = %q, want %q", got, want)
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		size int
		want []string
	}{
		{"", 3, nil},
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{"abcdefg", 0, []string{"abc", "def", "g"}},
		{"aé€b", 2, []string{"aé", "€", "b"}}, // never inside a rune
	} {
		got := Split(c.in, c.size)
		if !slices.Equal(got, c.want) || strings.Join(got, "") != c.in {
			t.Errorf("Split(%q, %d) = %q, want %q", c.in, c.size, got, c.want)
		}
	}
}

func TestSSE(t *testing.T) {
	rec := httptest.NewRecorder()
	s := StartSSE(rec)
	s.Send("message_start", map[string]any{"type": "message_start"})
	s.SendRaw("", "[DONE]")
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	want := "event: message_start\ndata: {\"type\":\"message_start\"}\n\ndata: [DONE]\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	if !rec.Flushed {
		t.Error("events not flushed")
	}
}
