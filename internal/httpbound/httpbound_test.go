package httpbound_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/httpbound"
)

// TestClient: a reply within the limit is read whole; one whose
// Content-Length is over it is refused before its body is read; one that
// is longer than it says is cut at the limit; with every limit off the
// base client is returned as it is.
func TestClient(t *testing.T) {
	body := strings.Repeat("x", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no Content-Length
		}
		io.WriteString(w, body)
	}))
	defer srv.Close()
	l := httpbound.Limits{MaxBytes: 1000, MaxBytesOption: "X.MaxReplyBytes"}
	c := httpbound.Client(nil, l)
	for _, path := range []string{"/", "/chunked"} {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != body {
			t.Fatalf("%s: read %d bytes, %v; want the whole body", path, len(got), err)
		}
	}
	l.MaxBytes = 999
	c = httpbound.Client(nil, l)
	if _, err := c.Get(srv.URL + "/"); !errors.Is(err, httpbound.ErrRefused) || !strings.Contains(err.Error(), "body over 999 bytes (X.MaxReplyBytes; Content-Length 1000)") {
		t.Fatalf("Content-Length over the limit: %v", err)
	}
	resp, err := c.Get(srv.URL + "/chunked")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, httpbound.ErrRefused) || len(got) > 999 {
		t.Fatalf("a body longer than the limit: read %d bytes, %v", len(got), err)
	}
	base := &http.Client{}
	if httpbound.Client(base, httpbound.Limits{}) != base {
		t.Fatal("with no limits the base client is not returned as it is")
	}
}

func TestResolve(t *testing.T) {
	if got := httpbound.Resolve(int64(0), 7); got != 7 {
		t.Errorf("Resolve(0, 7) = %d", got)
	}
	if got := httpbound.Resolve(int64(-1), 7); got != 0 {
		t.Errorf("Resolve(-1, 7) = %d", got)
	}
	if got := httpbound.Resolve(int64(3), 7); got != 3 {
		t.Errorf("Resolve(3, 7) = %d", got)
	}
}
