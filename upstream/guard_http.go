package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/toolsift/toolsift/internal/redact"
)

// defaultMaxMessageBytes is HubOptions.MaxMessageBytes's default: the most
// a url server may send in one response body that is not an event stream,
// or in one server-sent event; the same bound as one line of a stdio
// server's stdout. See docs/limits.md.
const defaultMaxMessageBytes = 16 << 20

// Defaults of the tool list limits (HubOptions.MaxTools and the others;
// docs/limits.md). Real servers list tens to hundreds of tools with
// descriptions of a few KiB at most.
const (
	defaultMaxTools            = 5000
	defaultMaxToolPages        = 1000
	defaultMaxDescriptionBytes = 64 << 10
	defaultMaxSchemaBytes      = 1 << 20
)

// ErrForeignOrigin is wrapped by the error of a request a url server's
// transport refused because it was going to another origin (scheme, host
// and port) than the server's URL: a redirect, or an SSE endpoint event
// naming another host. Configured headers and tokens go to the server's
// origin only, so such a request is never sent.
var ErrForeignOrigin = errors.New("refused a request to another origin")

// ErrTooLarge is wrapped by the error of a url server whose response body
// or server-sent event is larger than HubOptions.MaxMessageBytes.
var ErrTooLarge = errors.New("message larger than the limit")

// guardTransport is the outermost transport of a url server: it refuses
// requests to any origin but the server's, puts the configured headers on
// the others, and bounds what the server sends back.
type guardTransport struct {
	base    http.RoundTripper
	server  string
	origin  string
	headers map[string]string
	max     int64
	deep    *deepFilter // nil: bodies are not rewritten
}

func (t *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if o := origin(req.URL.String()); o == "" || o != t.origin {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("server %q: %w %s (its URL's origin is %s)", t.server, ErrForeignOrigin, redact.URL(req.URL.String()), t.origin)
	}
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.StatusCode >= 400 {
		if rec, ok := req.Context().Value(httpStatusKey{}).(*httpStatus); ok {
			rec.record(httpFailure{status: resp.StatusCode, method: req.Method, url: req.URL.String()})
		}
	}
	events := strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
	if t.max > 0 {
		lb := &limitedBody{rc: resp.Body, server: t.server, max: t.max, left: t.max}
		if events {
			// The SDK bounds an event at the same limit (MaxEventSize) and
			// says so; this bound, twice that, stops its drain of the rest of
			// an endless stream.
			lb.events = true
			lb.max *= 2
			lb.left = lb.max
		}
		resp.Body = lb
	}
	if t.deep != nil {
		// Messages nested too deep are rewritten before the SDK decodes
		// them (guard_depth.go): a JSON body whole, an event stream event by event.
		if events {
			resp.Body = &deepEvents{r: bufio.NewReaderSize(resp.Body, 16<<10), rc: resp.Body, deep: t.deep}
		} else {
			resp.Body = &deepJSON{rc: resp.Body, deep: t.deep}
		}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	return resp, nil
}

// deepJSON is a JSON response body, rewritten by a deepFilter when it is a
// message nested too deep. It reads the body whole at the first Read (the
// SDK does too), within limitedBody's bound.
type deepJSON struct {
	rc   io.ReadCloser
	deep *deepFilter
	buf  []byte
	read bool
	err  error
}

func (b *deepJSON) Read(p []byte) (int, error) {
	if !b.read {
		b.read = true
		data, err := io.ReadAll(b.rc)
		if err != nil {
			b.err = err
		} else {
			b.err = io.EOF
		}
		if shape, depth := jsonrpcShape(bytes.TrimSpace(data)); shape {
			b.deep.saw(data)
			if b.deep.needs(depth) {
				if out := b.deep.filter(data, depth); out != nil {
					data = out
				}
			}
		}
		b.buf = data
	}
	if len(b.buf) == 0 {
		return 0, b.err
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

func (b *deepJSON) Close() error { return b.rc.Close() }

// deepEvents is an event stream whose events' data, when it is a JSON-RPC
// message nested too deep, is rewritten by a deepFilter: an event whose
// message is dropped keeps its other fields (an id, for resumption) and
// loses its data, which the SDK skips. Everything else passes unchanged.
type deepEvents struct {
	r     *bufio.Reader
	rc    io.Closer
	deep  *deepFilter
	event [][]byte // the lines of the current event, not yet passed on
	out   []byte
	err   error
}

func (d *deepEvents) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		line, err := d.r.ReadBytes('\n')
		if len(bytes.TrimRight(line, "\r\n")) == 0 && len(line) > 0 {
			d.out = append(d.flush(), line...)
		} else if len(line) > 0 {
			d.event = append(d.event, line)
		}
		if err != nil {
			d.out = append(d.out, d.flush()...)
			d.err = err
		}
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}

// flush returns the current event's lines, rewritten if need be.
func (d *deepEvents) flush() []byte {
	lines := d.event
	d.event = nil
	var data [][]byte
	for _, l := range lines {
		if v, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			v, _ = bytes.CutPrefix(v, []byte(" "))
			data = append(data, bytes.TrimRight(v, "\r\n"))
		}
	}
	var out []byte
	msg := bytes.Join(data, []byte{'\n'})
	shape, depth := jsonrpcShape(bytes.TrimSpace(msg))
	if len(data) > 0 && shape {
		d.deep.saw(msg)
	}
	if len(data) == 0 || !shape || !d.deep.needs(depth) {
		for _, l := range lines {
			out = append(out, l...)
		}
		return out
	}
	rewritten := d.deep.filter(msg, depth)
	for _, l := range lines {
		if !bytes.HasPrefix(l, []byte("data:")) {
			out = append(out, l...)
		}
	}
	if rewritten != nil {
		out = append(out, "data: "...)
		out = append(out, bytes.ReplaceAll(rewritten, []byte{'\n'}, []byte("\ndata: "))...)
		out = append(out, '\n')
	}
	return out
}

func (d *deepEvents) Close() error { return d.rc.Close() }

// httpStatusKey is the context key of an *httpStatus: the guard records
// there the failed responses of the requests made under that context, so
// that the Hub can say what the SDK's errors leave out (the status code,
// the method and the URL).
type httpStatusKey struct{}

// httpStatus is the last failed response (status 400 or more) to a
// request made under one context. Safe for concurrent use.
type httpStatus struct {
	mu   sync.Mutex
	last *httpFailure
	// auth is the Authorizer's error that failed a request (a login
	// needed): the SDK drops it when server/discover fails and it falls
	// back to initialize (auth.go).
	auth error
}

type httpFailure struct {
	status      int
	method, url string
}

func (f httpFailure) String() string {
	return fmt.Sprintf("HTTP %d %s from %s %s", f.status, http.StatusText(f.status), f.method, redact.URL(f.url))
}

// withHTTPStatus returns ctx with a new recorder of failed responses.
func withHTTPStatus(ctx context.Context) (context.Context, *httpStatus) {
	rec := &httpStatus{}
	return context.WithValue(ctx, httpStatusKey{}, rec), rec
}

// recordAuth notes the Authorizer's error that failed a request made
// under ctx.
func recordAuth(ctx context.Context, err error) {
	if r, ok := ctx.Value(httpStatusKey{}).(*httpStatus); ok {
		r.mu.Lock()
		r.auth = err
		r.mu.Unlock()
	}
}

// authErr is the Authorizer's last error under r's context, if any.
func (r *httpStatus) authErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.auth
}

func (r *httpStatus) record(f httpFailure) {
	if f.method == http.MethodGet && f.status == http.StatusMethodNotAllowed {
		return // a streamable server without the optional GET stream
	}
	r.mu.Lock()
	r.last = &f
	r.mu.Unlock()
}

// failure returns the last failed response recorded, or nil.
func (r *httpStatus) failure() *httpFailure {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// explain adds the last failed response, if any, to err, with a hint for
// the statuses that usually mean a wrong URL (404 to initialize, op
// "connect") or missing credentials (401, 403). No header is printed.
func (r *httpStatus) explain(op string, err error) error {
	f := r.failure()
	if f == nil || err == nil {
		return err
	}
	hint := ""
	switch {
	case f.status == http.StatusNotFound && op == "connect":
		hint = " (is the server's url right? nothing answers MCP at that path)"
	case f.status == http.StatusUnauthorized || f.status == http.StatusForbidden:
		hint = " (the server wants credentials: log in (toolbench login), or set the headers it needs in the config)"
	}
	return fmt.Errorf("%s%s: %w", f, hint, err)
}

// limitedBody fails a read once a body (or, for an event stream, one
// event) has gone past max bytes, so that neither the SDK's io.ReadAll nor
// its drain of an endless stream reads on.
type limitedBody struct {
	rc     io.ReadCloser
	server string
	max    int64
	left   int64
	events bool // reset left at each blank line (the end of an event)
	// the last byte was a line end ('\n', or '\r' not yet followed by
	// '\n'), and whether it was '\r'
	lineEnd, cr bool
	err         error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if !b.events {
		b.left -= int64(n)
	} else {
		for _, c := range p[:n] {
			switch {
			case c == '\n' && b.cr:
				b.cr = false // the \n of \r\n: the same line end
			case c == '\n' || c == '\r':
				if b.lineEnd {
					b.left = b.max + 1 // a blank line: the event ended
				}
				b.lineEnd, b.cr = true, c == '\r'
			default:
				b.lineEnd, b.cr = false, false
			}
			b.left--
			if b.left < 0 {
				break
			}
		}
	}
	if b.left < 0 {
		what, max := "response body", b.max
		if b.events {
			what, max = "server-sent event", b.max/2
		}
		b.err = fmt.Errorf("server %q: %w: %s over %d bytes (HubOptions.MaxMessageBytes)", b.server, ErrTooLarge, what, max)
		return 0, b.err
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// guardedClient returns the client for url server name: base's transport
// (with auth's tokens, when there is an Authorizer and the config sets no
// Authorization header) behind a guard that bounds bodies to max bytes (0:
// no limit), and redirects followed only within the server's origin.
func guardedClient(base *http.Client, auth Authorizer, name, serverURL string, headers map[string]string, max int64, deep *deepFilter) *http.Client {
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if auth != nil && !hasAuthorization(headers) {
		rt = newAuthTransport(rt, auth, name, serverURL)
	}
	o := origin(serverURL)
	c.Transport = &guardTransport{base: rt, server: name, origin: o, headers: headers, max: max, deep: deep}
	next := base.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if origin(req.URL.String()) != o {
			return fmt.Errorf("server %q: %w: a redirect to %s (its URL's origin is %s)", name, ErrForeignOrigin, redact.URL(req.URL.String()), o)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return fmt.Errorf("server %q: stopped after 10 redirects", name)
		}
		return nil
	}
	return &c
}

// messageLimit is HubOptions.MaxMessageBytes m with its default; negative
// means no limit (0 here).
func messageLimit(m int) int64 {
	switch {
	case m == 0:
		return defaultMaxMessageBytes
	case m < 0:
		return 0
	default:
		return int64(m)
	}
}

func hasAuthorization(headers map[string]string) bool {
	for k := range headers {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}
