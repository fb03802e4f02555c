package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/upstream"
)

// The limits of toolsift serve's HTTP side (docs/limits.md, "What a client
// may send"): which origins may call, how long a request body may take,
// how many connections may be open.

// defaultBodyTimeout is how long a request body may take to arrive.
const defaultBodyTimeout = 30 * time.Second

// DefaultMaxConns is the default cap on open connections of toolsift serve
// --listen (a client holds one for its event stream and one or two for its
// requests); a quarter of them, 64, may come from one host (see
// LimitListener).
const DefaultMaxConns = 256

// maxBodyBytes is the most a request body may hold: the go-sdk's own
// limit, which it applies after the guard has read the body.
const maxBodyBytes = mcp.DefaultMaxRequestBodyBytes

// checkOrigin refuses, with 403, a request whose Origin header is present
// and not allowed (MCP transport: servers MUST validate Origin, so that a
// web page cannot drive a local server). Allowed: loopback origins
// (http://localhost:*, http://127.0.0.1:*, http://[::1]:*), the origin of
// the request's own Host (the address it listens on), and allowed (exact
// origins, scheme://host[:port], or "*" for any).
func checkOrigin(allowed []string, next http.Handler) http.Handler {
	exact := map[string]bool{}
	any := false
	for _, o := range allowed {
		if o == "*" {
			any = true
		}
		exact[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || any || exact[strings.ToLower(origin)] || originAllowed(origin, r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		http.Error(w, fmt.Sprintf("403 forbidden: Origin %q is not allowed: toolsift serve answers loopback origins and its own host only (allow more with --allow-origin, gateway.HTTPOptions.AllowedOrigins)", origin), http.StatusForbidden)
	})
}

// originAllowed reports whether origin is a loopback origin or the
// request's own host.
func originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" && u.Path != "/" || u.User != nil {
		return false // "null", file://, a malformed value
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// bodyDeadline reads the body of a POST within timeout and hands it on
// read, so that a body trickling in holds its connection for timeout at
// most; then the connection's read deadline is lifted again, for the long
// event streams of the same connection. A body over the SDK's limit is
// refused with 413 before it is all read.
func bodyDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		deadline := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
		if deadline {
			_ = rc.SetReadDeadline(time.Time{})
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("408 request timeout: the request body did not arrive within %v (gateway.HTTPOptions.BodyTimeout)", timeout), http.StatusRequestTimeout)
			return
		case err != nil:
			http.Error(w, fmt.Sprintf("400 bad request: reading the request body: %v", err), http.StatusBadRequest)
			return
		case len(body) > maxBodyBytes:
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("413 request entity too large: request body over %d bytes", maxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// LimitListener returns a listener that keeps at most max
// connections open, and at most perHost of them from one host: its IP
// address, an IPv6 address by its /64 (what one machine is given). Past
// either cap, a new connection is answered 503 with a body naming the
// limit and closed at once, so that a client that holds connections
// (slow headers, slow bodies, idle keep-alives) can neither exhaust the
// process's file descriptors nor lock other hosts out: a connection
// whose headers trickle is held for the http.Server's ReadHeaderTimeout
// at most, and one host holds perHost of them at most. perHost 0 means a
// quarter of max (at least 8, or max when lower); perHost ≥ max leaves
// only the total cap. Connections without an IP address (a unix socket)
// count towards max only. Behind a reverse proxy every connection comes
// from the proxy's address: set perHost to max there, and let the proxy
// cap its clients. toolsift serve --max-conns, --max-conns-per-host.
func LimitListener(ln net.Listener, max, perHost int) net.Listener {
	if perHost <= 0 {
		perHost = max / 4
		if perHost < 8 {
			perHost = min(8, max)
		}
	}
	return &limitListener{Listener: ln, max: max, perHost: perHost, hosts: map[string]int{}}
}

type limitListener struct {
	net.Listener
	max, perHost int

	mu    sync.Mutex
	open  int
	hosts map[string]int // host → its open connections, when not 0
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := hostOf(c.RemoteAddr())
		l.mu.Lock()
		inTotal := l.open < l.max
		inHost := host == "" || l.hosts[host] < l.perHost
		if inTotal && inHost {
			l.open++
			if host != "" {
				l.hosts[host]++
			}
		}
		l.mu.Unlock()
		switch {
		case inTotal && inHost:
			return &limitConn{Conn: c, l: l, host: host}, nil
		case !inHost:
			go refuse(c, fmt.Sprintf("too many connections from %s: toolsift serve keeps at most %d open per host (--max-conns-per-host)", host, l.perHost))
		default:
			go refuse(c, fmt.Sprintf("too many connections: toolsift serve keeps at most %d open (--max-conns)", l.max))
		}
	}
}

// hostOf is the host a connection counts against: its IPv4 address, the
// /64 of its IPv6 address, or "" without an IP address.
func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	var ip net.IP
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	default:
		h, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return ""
		}
		ip = net.ParseIP(h)
	}
	if ip == nil {
		return ""
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// refuse answers a connection over a cap with why, and closes it.
func refuse(c net.Conn, why string) {
	defer c.Close()
	body := "503 service unavailable: " + why + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s", len(body), body)
}

type limitConn struct {
	net.Conn
	l    *limitListener
	host string
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		if c.host != "" {
			if c.l.hosts[c.host]--; c.l.hosts[c.host] <= 0 {
				delete(c.l.hosts, c.host)
			}
		}
		c.l.mu.Unlock()
	})
	return err
}

// DefaultClientRequestsPerMinute is how many sampling and elicitation
// requests one upstream server may send the proxy's clients a minute (all
// at once, then one every 2 seconds): each asks the user's model or the
// user, so a server that sends them in a loop spends the user's tokens or
// buries them in questions.
const DefaultClientRequestsPerMinute = 30

// serverRate is a token bucket per upstream server for sampling and
// elicitation requests (roots/list is free: it reads the client's roots).
type serverRate struct {
	perMinute int

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newServerRate(perMinute int) *serverRate {
	if perMinute < 0 {
		return nil
	}
	return &serverRate{perMinute: perMinute, buckets: map[string]*bucket{}}
}

// allow takes a token for a request of server, or returns the JSON-RPC
// error the server gets: it says what was refused and why.
func (r *serverRate) allow(server, method string) error {
	if r == nil || (method != upstream.MethodCreateMessage && method != upstream.MethodElicit) {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	b := r.buckets[server]
	if b == nil {
		b = &bucket{tokens: float64(r.perMinute), at: now}
		r.buckets[server] = b
	}
	b.tokens = min(float64(r.perMinute), b.tokens+now.Sub(b.at).Minutes()*float64(r.perMinute))
	b.at = now
	if b.tokens < 1 {
		return &upstream.RPCError{Code: codeDeclined, Message: fmt.Sprintf("toolsift serve: %s from %s refused: over the limit of %d sampling and elicitation requests a minute per server (toolsift serve --client-requests-per-minute)", method, server, r.perMinute)}
	}
	b.tokens--
	return nil
}

// DefaultMaxResultBytes is the default bound on the bytes of upstream tool
// results the proxy holds at once, across calls and sessions (from the
// upstream's answer until the SDK has written the proxy's): four results
// of the Hub's largest message (upstream.HubOptions.MaxMessageBytes, 16 MiB).
// Each byte held costs several in memory (the SDK decodes and encodes it),
// so this bounds what concurrent large results cost.
const DefaultMaxResultBytes = 64 << 20

// byteBudget bounds the result bytes in flight: a result waits until the
// results before it are written, and one larger than the whole budget is
// refused.
type byteBudget struct {
	max int64

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed and replaced on every release
}

func newByteBudget(max int64) *byteBudget {
	return &byteBudget{max: max, freed: make(chan struct{})}
}

// errTooLarge is a result larger than the whole budget.
var errTooLarge = errors.New("larger than the limit")

// acquire takes n bytes, waiting while others hold too many; it fails at
// once when n exceeds the budget, and when ctx ends while it waits.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	if n > b.max {
		return errTooLarge
	}
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}
