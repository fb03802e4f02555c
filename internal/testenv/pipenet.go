package testenv

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
)

// PipeListener is a net.Listener in memory: each DialContext makes a
// net.Pipe and hands one end to Accept. Its connections block on channels
// only, so a real net/http server and client talking over it inside a
// testing/synctest bubble run on the bubble's fake clock, and a timeout of
// minutes passes at once once every goroutine waits.
type PipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewPipeListener returns a listener that accepts what its DialContext
// dials.
func NewPipeListener() *PipeListener {
	return &PipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept waits for a connection or for Close.
func (l *PipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and DialContext fail; connections already made stay.
func (l *PipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is a placeholder: every address dials this listener.
func (l *PipeListener) Addr() net.Addr { return pipeAddr{} }

// DialContext connects to the listener, whatever network and address say;
// it is an http.Transport's DialContext.
func (l *PipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// PipeServer serves h over a PipeListener until the test ends, and returns
// a client whose transport reaches it at any http:// URL (say
// "http://model.test"). Call it inside a synctest bubble, so that the
// server's and the client's goroutines belong to it; the test's cleanup
// closes both.
func PipeServer(t testing.TB, h http.Handler) *http.Client {
	l := NewPipeListener()
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(l)
	}()
	tr := &http.Transport{DialContext: l.DialContext}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
		<-served
	})
	return &http.Client{Transport: tr}
}
