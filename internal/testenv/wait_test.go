package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// fatalRecorder is a recorder whose Fatalf records and ends the goroutine,
// as testing's does.
type fatalRecorder struct{ recorder }

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// TestBufferWaitFor: WaitFor returns at the write that completes the text
// it waits for, even split across writes, and fails after WaitLimit when
// the text never comes, quoting what was written.
func TestBufferWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Buffer
		go func() {
			for _, piece := range []string{"\rconn", "ecting: 1/2", " ready"} {
				time.Sleep(time.Second)
				b.Write([]byte(piece))
			}
		}()
		start := time.Now()
		b.WaitFor(t, "connecting: 1")
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("WaitFor returned after %v, want 2s: at the second write", took)
		}
		b.WaitFor(t, "connecting") // already there
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("WaitFor of written text took %v", took-2*time.Second)
		}

		r := &fatalRecorder{recorder{TB: t}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.WaitFor(r, "never")
		}()
		<-done
		if len(r.errs) != 1 || !strings.Contains(r.errs[0], `for "never"; written so far: "\rconnecting: 1/2 ready"`) {
			t.Errorf("errors %q, want one quoting what was written", r.errs)
		}
		if took := time.Since(start); took != 2*time.Second+WaitLimit() { // called at 2s
			t.Errorf("the failing WaitFor gave up %v after the start, want WaitLimit after its call", took)
		}
	})
}

// TestPipeServer: a net/http server and client over a PipeListener, in a
// synctest bubble: requests reach the handler at any URL, and a client's
// deadline passes on the fake clock.
func TestPipeServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := PipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				select {
				case <-time.After(time.Hour):
				case <-r.Context().Done():
				}
				return
			}
			fmt.Fprintf(w, "%s %s", r.Host, r.URL.Path)
		}))
		for u, want := range map[string]string{"http://a.test/one": "a.test /one", "http://b.test/two": "b.test /two"} {
			resp, err := c.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != want {
				t.Errorf("GET %s = %q, want %q", u, body, want)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://a.test/slow", nil)
		start := time.Now()
		_, err := c.Do(req)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute {
			t.Errorf("a request past its deadline: %v after %v, want DeadlineExceeded after 1m", err, time.Since(start))
		}
	})
}
