// Package httpbound bounds what a model API's server can make a client
// read and wait for: the bytes of one reply (a JSON body or a whole event
// stream, so every server-sent event too), the time of one request, and
// the longest silence within a reply's body. The chat models of agent
// (through internal/openaiclient), agent/anthropicmodel and provider's embedder
// send their requests through it (docs/limits.md, "What a model may
// send"). Without it a 1.6 GB body or one 1 GB event filled memory, and an
// endless stream grew without end.
package httpbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Defaults of Limits, as the options that set them document.
const (
	DefaultMaxBytes    = 64 << 20
	DefaultTimeout     = 10 * time.Minute
	DefaultIdleTimeout = 2 * time.Minute
)

// ErrRefused is wrapped by every error of a limit.
var ErrRefused = errors.New("model reply refused")

// Limits of one request. Zero or negative turns a limit off.
type Limits struct {
	// MaxBytes bounds the reply body. Option names its option.
	MaxBytes int64
	// Timeout bounds the request, from sending it to the reply's last
	// byte.
	Timeout time.Duration
	// IdleTimeout bounds the wait for the next bytes of a reply's body.
	IdleTimeout time.Duration
	// Options names the options in errors, e.g. "MaxReplyBytes",
	// "ReplyTimeout" and "ReplyIdleTimeout" (with their type's name).
	MaxBytesOption, TimeoutOption, IdleTimeoutOption string
}

// Resolve maps zero to the default and a negative value to 0 (off).
func Resolve[T int64 | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Client returns an http.Client that sends through base (nil:
// http.DefaultClient) within l. base's own settings (its transport,
// redirects, jar, timeout) are kept.
func Client(base *http.Client, l Limits) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	if l.MaxBytes <= 0 && l.Timeout <= 0 && l.IdleTimeout <= 0 {
		return base
	}
	c := *base
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = &transport{next: next, l: l}
	return &c
}

type transport struct {
	next http.RoundTripper
	l    Limits
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	var stop func() bool
	if t.l.Timeout > 0 {
		cause := fmt.Errorf("%w: no whole reply within %s (%s)", ErrRefused, t.l.Timeout, t.l.TimeoutOption)
		timer := time.AfterFunc(t.l.Timeout, func() { cancel(cause) })
		stop = timer.Stop
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		if stop != nil {
			stop()
		}
		cerr := context.Cause(ctx)
		cancel(nil)
		if errors.Is(cerr, ErrRefused) {
			return nil, cerr
		}
		return nil, err
	}
	b := &body{rc: resp.Body, ctx: ctx, cancel: cancel, stop: stop, l: t.l}
	if t.l.IdleTimeout > 0 {
		b.idleCause = fmt.Errorf("%w: no bytes for %s in the middle of a reply (%s)", ErrRefused, t.l.IdleTimeout, t.l.IdleTimeoutOption)
		b.idle = time.AfterFunc(t.l.IdleTimeout, func() { cancel(b.idleCause) })
	}
	resp.Body = b
	if t.l.MaxBytes > 0 && resp.ContentLength > t.l.MaxBytes {
		b.Close()
		return nil, b.tooLarge(fmt.Sprintf("Content-Length %d", resp.ContentLength))
	}
	return resp, nil
}

// body counts and times a reply's bytes.
type body struct {
	rc        io.ReadCloser
	ctx       context.Context
	cancel    context.CancelCauseFunc
	stop      func() bool
	idle      *time.Timer
	idleCause error
	l         Limits

	mu   sync.Mutex
	n    int64
	done bool
}

func (b *body) tooLarge(what string) error {
	return fmt.Errorf("%w: body over %d bytes (%s; %s)", ErrRefused, b.l.MaxBytes, b.l.MaxBytesOption, what)
}

func (b *body) Read(p []byte) (int, error) {
	if b.l.MaxBytes > 0 {
		b.mu.Lock()
		left := b.l.MaxBytes + 1 - b.n
		b.mu.Unlock()
		if left <= 0 {
			return 0, b.tooLarge("more was sent")
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := b.rc.Read(p)
	if n > 0 && b.idle != nil {
		b.idle.Reset(b.l.IdleTimeout)
	}
	b.mu.Lock()
	b.n += int64(n)
	over := b.l.MaxBytes > 0 && b.n > b.l.MaxBytes
	b.mu.Unlock()
	if over {
		b.cancel(b.tooLarge("more was sent"))
		return 0, b.tooLarge("more was sent")
	}
	if err != nil && err != io.EOF {
		if cause := context.Cause(b.ctx); errors.Is(cause, ErrRefused) {
			return n, cause
		}
	}
	return n, err
}

func (b *body) Close() error {
	b.mu.Lock()
	done := b.done
	b.done = true
	b.mu.Unlock()
	if !done {
		if b.idle != nil {
			b.idle.Stop()
		}
		if b.stop != nil {
			b.stop()
		}
		defer b.cancel(nil)
	}
	return b.rc.Close()
}
