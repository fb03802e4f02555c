package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
)

// dialFrom dials addr from the loopback address local (127.0.0.x: a host
// of its own to the server).
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLimitPerHost: one host opening more slow-header sockets than the
// whole cap (issue 44: 260 of them let another host through 7 times in
// 73) holds its share of the connections, a quarter of them, and no more:
// the rest of its sockets are answered 503 at once, naming
// --max-conns-per-host; another host's requests all get through
// meanwhile; a socket the first host closes makes room for it again.
func TestLimitPerHost(t *testing.T) {
	const (
		flood   = 260
		perHost = gateway.DefaultMaxConns / 4
		flooder = "127.0.0.2"
	)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 2*flood) // the flooder's connections the server took
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: 10 * time.Second, // as toolsift serve's
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew && strings.HasPrefix(c.RemoteAddr().String(), flooder+":") {
				held <- c
			}
		},
	}
	go srv.Serve(gateway.LimitListener(raw, gateway.DefaultMaxConns, 0))
	t.Cleanup(func() { srv.Close() })
	addr := raw.Addr().String()

	// The flood: sockets whose headers never end. Each is either taken by
	// the server (held) or answered (refused).
	refused := make(chan string, flood)
	conns := make([]net.Conn, flood)
	answered := make([]chan struct{}, flood)
	for i := range flood {
		c := dialFrom(t, flooder, addr)
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		conns[i], answered[i] = c, make(chan struct{})
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return // held, and closed at the end
			}
			b, _ := io.ReadAll(resp.Body)
			close(answered[i])
			refused <- resp.Status + " " + string(b)
		}()
	}
	wait := time.NewTimer(testenv.WaitLimit())
	defer wait.Stop()
	nHeld, nRefused := 0, 0
	for nHeld+nRefused < flood {
		select {
		case <-held:
			nHeld++
		case answer := <-refused:
			nRefused++
			if !strings.HasPrefix(answer, "503 ") || !strings.Contains(answer, "too many connections from "+flooder+": toolsift serve keeps at most 64 open per host (--max-conns-per-host)") {
				t.Errorf("a flood socket was answered %q, want 503 naming --max-conns-per-host", answer)
			}
		case <-wait.C:
			t.Fatalf("of %d flood sockets, %d were taken and %d answered", flood, nHeld, nRefused)
		}
	}
	if nHeld != perHost {
		t.Errorf("the server took %d of the flood's %d sockets, want %d (a quarter of %d)", nHeld, flood, perHost, gateway.DefaultMaxConns)
	}

	// Another host, a new connection per request, during the flood.
	other := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}
			return d.DialContext(ctx, network, a)
		},
	}}
	ok, first := 0, ""
	const requests = 73
	for range requests {
		resp, err := other.Get("http://" + addr)
		if err != nil {
			t.Fatalf("another host's request: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			ok++
		case first == "":
			first = strings.TrimSpace(string(b))
		}
	}
	if ok != requests {
		t.Errorf("another host got %d of its %d requests through during the flood, want all; the first refused: %s", ok, requests, first)
	}

	// A held socket the flooder closes makes room for one more of its own.
	for i, c := range conns {
		select {
		case <-answered[i]:
			continue
		default:
		}
		c.Close()
		break
	}
	for deadline := time.Now().Add(testenv.WaitLimit()); ; time.Sleep(10 * time.Millisecond) {
		c := dialFrom(t, flooder, addr)
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a socket the flooder closed never made room for another of its own")
		}
	}
}
