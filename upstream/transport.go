package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopGrace is how long a stdio server gets to exit after its stdin is
// closed, and again after SIGTERM, before its process group is killed: a
// server that ignores both is gone 2×stopGrace after Close.
const stopGrace = time.Second

// maxLineLength bounds one line of a stdio server's stdout, as the SDK
// bounds one JSON-RPC frame: a longer line ends that server's session
// instead of growing a buffer without limit.
const maxLineLength = mcp.DefaultMaxLineLength

// stderrTailSize is how much of a server's stderr is kept for reports.
const stderrTailSize = 4 << 10

// tailBuffer keeps the last max bytes written to it. It is safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = slices.Clone(t.buf[over:])
	}
	return len(p), nil
}

// String returns the kept bytes, trimmed, starting at a line boundary when
// the start was cut off.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(t.buf) >= t.max {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
	}
	return strings.TrimSpace(s)
}

// attempt is what one connection attempt needs besides the session: the
// stderr of a stdio server, and how to make sure its process is gone.
type attempt struct {
	stderr  *tailBuffer
	cmd     *exec.Cmd
	stdio   *stdioTransport // nil unless a stdio server
	cleanup func()          // closes the connection and stops what is left; may be nil
}

// kill stops a stdio server at once (SIGKILL to its process group), for a
// server that never finished connecting: it gets no grace.
func (a *attempt) kill() {
	if a != nil && a.stdio != nil {
		a.stdio.kill()
	}
}

// wedged reports whether the attempt's session was killed because the
// server stopped reading its stdin.
func (a *attempt) wedged() bool {
	return a != nil && a.stdio != nil && a.stdio.wedged.Load()
}

// transports returns the transports to try, in order, for one connection
// attempt of s (more than one only for a url without a type).
func (s *server) transports(ctx context.Context) ([]mcp.Transport, *attempt, error) {
	h, sc, deep := s.h, s.cfg, s.deep
	switch {
	case sc.Dial != nil:
		rwc, err := sc.Dial(ctx)
		if err != nil {
			return nil, nil, err
		}
		a := &attempt{stderr: &tailBuffer{max: stderrTailSize}}
		return []mcp.Transport{dialClientTransport(rwc, a.stderr, deep)}, a, nil
	case sc.Command != "":
		return s.commandTransport()
	default:
		client := guardedClient(h.opts.HTTPClient, h.opts.Auth, s.name, sc.URL, sc.Headers, messageLimit(h.opts.MaxMessageBytes), deep)
		maxEvent := int(messageLimit(h.opts.MaxMessageBytes))
		if maxEvent == 0 {
			maxEvent = -1
		}
		// MaxRetries left at the SDK's default (5, with backoff, reset
		// whenever the stream makes progress): a server that ends an SSE
		// stream (2025-11-25 SSE polling, an idle timeout in between) is
		// resumed with Last-Event-ID instead of the session being torn down
		// and the server's tools leaving the catalog while it restarts.
		streamable := &mcp.StreamableClientTransport{Endpoint: sc.URL, HTTPClient: client, MaxEventSize: maxEvent}
		sse := &mcp.SSEClientTransport{Endpoint: sc.URL, HTTPClient: client, MaxEventSize: maxEvent}
		switch sc.Type {
		case "http":
			return []mcp.Transport{streamable}, &attempt{}, nil
		case "sse":
			return []mcp.Transport{sse}, &attempt{}, nil
		default:
			return []mcp.Transport{streamable, sse}, &attempt{}, nil
		}
	}
}

func (s *server) commandTransport() ([]mcp.Transport, *attempt, error) {
	h, sc := s.h, s.cfg
	dir := h.dir
	if sc.Cwd != "" {
		dir = sc.Cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(h.dir, dir)
		}
	}
	command := sc.Command
	// A relative command path with a separator ("./bin/server") is relative
	// to the server's folder, as it would be in a shell started there.
	if strings.ContainsRune(command, filepath.Separator) && !filepath.IsAbs(command) && dir != "" {
		command = filepath.Join(dir, command)
	}
	cmd := exec.Command(command, sc.Args...)
	if cmd.Err != nil {
		return nil, nil, fmt.Errorf("command %q: %w", sc.Command, cmd.Err)
	}
	cmd.Dir = dir
	// Only a default set, the server's InheritEnv and its Env: see environ.
	cmd.Env = environ(sc, os.Environ())
	a := &attempt{stderr: &tailBuffer{max: stderrTailSize}, cmd: cmd}
	cmd.Stderr = a.stderr
	// Don't wait forever for stderr when a grandchild keeps it open.
	cmd.WaitDelay = stopGrace
	killGroup := setProcessGroup(cmd)
	t := &stdioTransport{cmd: cmd, noise: a.stderr, killGroup: killGroup, deep: s.deep}
	a.stdio = t
	a.cleanup = t.stop
	return []mcp.Transport{t}, a, nil
}

// dialTransport speaks newline-delimited JSON-RPC over a stream that
// config.Server.Dial opened, as mcp.InMemoryTransport does over its pipe:
// the same framing and line limit. Closing the connection closes rwc once.
func dialTransport(rwc io.ReadWriteCloser) mcp.Transport {
	return &mcp.IOTransport{Reader: rwc, Writer: nopCloser{rwc}}
}

// dialClientTransport is dialTransport for the client side of a Dial
// stream, with a stdio server's line filter: lines that are not JSON-RPC
// go to noise, messages nested too deep are rewritten (deepFilter).
func dialClientTransport(rwc io.ReadWriteCloser, noise io.Writer, deep *deepFilter) mcp.Transport {
	lines := &jsonLines{r: bufio.NewReaderSize(rwc, 64<<10), noise: noise, max: maxLineLength, deep: deep}
	return &mcp.IOTransport{Reader: dialReader{lines, rwc}, Writer: nopCloser{rwc}, MaxLineLength: -1}
}

// dialReader reads through the line filter and closes the stream.
type dialReader struct {
	*jsonLines
	rwc io.Closer
}

func (d dialReader) Close() error { return d.rwc.Close() }

// nopCloser is a writer whose Close does nothing: the reader side closes
// the stream.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// stdioTransport runs a server as a child process and speaks newline-
// delimited JSON over its stdin and stdout, like mcp.CommandTransport, but
// tolerates what real servers do: lines on stdout that are not JSON-RPC
// (banners, logs) are moved to the stderr tail instead of breaking the
// session, and stopping also kills what the server left in its process
// group. A write the server does not take in time (it stopped reading
// stdin) kills the process, so that no caller waits on it forever.
type stdioTransport struct {
	cmd       *exec.Cmd
	noise     io.Writer
	killGroup func()
	deep      *deepFilter

	once    sync.Once
	started atomic.Bool
	stdin   io.Closer
	waited  error
	wedged  atomic.Bool // killed because a write did not finish in time
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := startProcess(t.cmd); err != nil {
		return nil, err
	}
	t.stdin = stdin
	t.started.Store(true)
	pipes := &mcp.IOTransport{
		Reader: &jsonLines{r: bufio.NewReaderSize(stdout, 64<<10), noise: t.noise, max: maxLineLength, deep: t.deep},
		Writer: &stdinCloser{WriteCloser: stdin, stop: t.stop},
		// jsonLines already bounds a line; a negative value tells the SDK
		// not to count again.
		MaxLineLength: -1,
	}
	conn, err := pipes.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stdioConn{Connection: conn, t: t}, nil
}

// kill sends SIGKILL to the server's process group (and the process, where
// there are no groups). Reaping is left to stop. Safe to call at any time.
func (t *stdioTransport) kill() {
	if !t.started.Load() {
		return
	}
	if t.killGroup != nil {
		t.killGroup()
	}
	_ = t.cmd.Process.Kill()
}

// wedge kills a server that stopped reading its stdin: the blocked write
// fails, the session ends and the supervisor restarts the server.
func (t *stdioTransport) wedge() {
	t.wedged.Store(true)
	t.kill()
	if t.stdin != nil {
		_ = t.stdin.Close()
	}
}

// stop ends the process the way the MCP spec asks: close its stdin, wait,
// SIGTERM, wait, SIGKILL; then reap it and kill what is left of its
// process group. It is idempotent, and bounded by about 3×stopGrace even
// when a grandchild keeps stderr open.
func (t *stdioTransport) stop() {
	t.once.Do(func() {
		if !t.started.Load() {
			return // never started
		}
		if t.stdin != nil {
			_ = t.stdin.Close()
		}
		done := make(chan error, 1)
		go func() { done <- t.cmd.Wait() }()
		wait := func() bool {
			timer := time.NewTimer(stopGrace)
			defer timer.Stop()
			select {
			case t.waited = <-done:
				return true
			case <-timer.C:
				return false
			}
		}
		if !wait() {
			_ = t.cmd.Process.Signal(syscall.SIGTERM)
			if !wait() {
				t.kill()
				t.waited = <-done
			}
		}
		if t.killGroup != nil {
			t.killGroup()
		}
	})
}

// errWedged is why a write to a stdio server failed when the server did not
// take it before the caller's ctx ended.
var errWedged = errors.New("server stopped reading its input; killed it")

// stdioConn makes the SDK's writes honour ctx: the SDK writes to the pipe
// without a deadline, so a server that stops reading stdin would block a
// call with large arguments, every later call and Close forever.
type stdioConn struct {
	mcp.Connection
	t *stdioTransport
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.Connection.Write(ctx, msg) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-done: // finished after all
		return err
	default:
	}
	// The message is half written or not at all, so the stream is lost
	// either way; killing the process also ends the blocked write.
	c.t.wedge()
	<-done
	return fmt.Errorf("%w: %w", errWedged, ctx.Err())
}

// stdinCloser stops the whole process when the SDK closes the connection.
type stdinCloser struct {
	io.WriteCloser
	stop func()
}

func (c *stdinCloser) Close() error {
	c.stop()
	return nil
}

// errLineTooLong ends the session of a server that writes a stdout line
// longer than maxLineLength.
var errLineTooLong = fmt.Errorf("stdout line longer than %d bytes", maxLineLength)

// jsonLines passes on the lines of r that are JSON-RPC messages and writes
// the others (banners, JSON logs, anything not JSON) to noise. A line
// longer than max is an error: at most max bytes of a line are buffered.
type jsonLines struct {
	r     *bufio.Reader
	noise io.Writer
	max   int
	deep  *deepFilter // nil: no rewriting
	line  []byte      // the current line, reused
	buf   []byte      // rest of the current line, not yet read
}

func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.buf) == 0 {
		line, err := j.readLine()
		if len(line) > 0 {
			if msg, ok := j.message(line); ok {
				j.buf = msg
			} else if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
				if len(trimmed) > stderrTailSize {
					trimmed = trimmed[:stderrTailSize]
				}
				_, _ = j.noise.Write(append(append([]byte("[stdout] "), trimmed...), '\n'))
			}
		}
		if err != nil {
			if len(j.buf) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, j.buf)
	j.buf = j.buf[n:]
	return n, nil
}

// message returns what of line the SDK reads: line itself when it is a
// JSON-RPC message, a rewrite when it is nested too deep (see deepFilter),
// nothing when the filter dropped it; ok is false for noise.
func (j *jsonLines) message(line []byte) (msg []byte, ok bool) {
	b := bytes.TrimSpace(line)
	shape, depth := jsonrpcShape(b)
	if !shape {
		return nil, false
	}
	j.deep.saw(b)
	if j.deep.needs(depth) {
		out := j.deep.filter(b, depth)
		if out == nil {
			return nil, true
		}
		if !json.Valid(out) {
			return nil, false
		}
		return append(out[:len(out):len(out)], '\n'), true
	}
	if depth > maxValidDepth || !json.Valid(b) {
		return nil, false
	}
	if len(line) != len(b)+1 || line[len(b)] != '\n' {
		// Space around the message, of which JSON allows only some
		// (bytes.TrimSpace also takes \v, \f, U+0085: a line with one
		// is valid JSON only without it), or no newline at the end:
		// the SDK reads the message alone, on a line of its own.
		return append(b[:len(b):len(b)], '\n'), true
	}
	return line, true
}

// readLine reads one line, with its newline, into j.line.
func (j *jsonLines) readLine() ([]byte, error) {
	if cap(j.line) > 1<<20 {
		j.line = nil // don't keep a large buffer for small lines
	}
	j.line = j.line[:0]
	for {
		frag, err := j.r.ReadSlice('\n')
		if len(j.line)+len(frag) > j.max {
			j.line = nil
			return nil, errLineTooLong
		}
		if need := len(j.line) + len(frag); need > cap(j.line) {
			// Double, rather than append's 1.25 for large slices: a
			// 15 MiB line allocated about 8 times its size, now 2.
			grown := make([]byte, len(j.line), min(max(need, 2*cap(j.line), 4096), j.max))
			copy(grown, j.line)
			j.line = grown
		}
		j.line = append(j.line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return j.line, err
	}
}

// isJSONRPC reports whether line is a JSON-RPC 2.0 message or batch: valid
// JSON, an object with "jsonrpc":"2.0" or a non-empty array of them. Logs
// in JSON (pino, bunyan) are objects without it. One scan finds the shape
// (jsonrpcShape) and json.Valid checks the rest, with no decoding.
func isJSONRPC(line []byte) bool {
	b := bytes.TrimSpace(line)
	ok, depth := jsonrpcShape(b)
	return ok && depth <= maxValidDepth && json.Valid(b)
}

// maxValidDepth is encoding/json's nesting limit: json.Valid fails deeper
// JSON. The SDK decodes far less (sdkMaxDepth).
const maxValidDepth = 10000

// Close does nothing: the connection is closed through stdin.
func (j *jsonLines) Close() error { return nil }

// connectSession runs one connection attempt: start the transport,
// initialize. When ctx ends, a stdio server is killed at once and the
// connection closed, even if the SDK is blocked writing to a peer that does
// not read (a hung stdio server, an in-memory pipe nobody serves); keep
// stays in force until the caller calls it, so listing tools is covered
// too. On failure nothing is cleaned up yet: the caller calls a.cleanup,
// after it has given back its start slot.
func (s *server) connectSession(ctx context.Context, client *mcp.Client) (cs *mcp.ClientSession, a *attempt, keep func(), err error) {
	h := s.h
	ts, a, err := s.transports(ctx)
	if err != nil {
		return nil, nil, func() {}, err
	}
	version := s.cfg.ProtocolVersion
	switch version {
	case "":
		version = h.opts.ProtocolVersion
	case "latest":
		version = "" // the SDK's default
	}
	var errs []error
	var tried []*capturingTransport
	for _, t := range ts {
		// The SSE transport ties its event stream to the ctx given to
		// Connect, so that ctx must live as long as the session, not just
		// this attempt.
		ct := &capturingTransport{Transport: t}
		ct.ctx, ct.cancel = context.WithCancel(h.life)
		tried = append(tried, ct)
		// A server that has not answered in time gets no grace: it may be
		// wedged, and it holds a start slot.
		abort := context.AfterFunc(ctx, func() { a.kill(); ct.close() })
		// The HTTP status of a failed initialize (or SSE stream), which
		// the SDK's errors leave out.
		cctx, status := withHTTPStatus(ctx)
		ct.ctx = context.WithValue(ct.ctx, httpStatusKey{}, status)
		cs, err := client.Connect(cctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err == nil {
			cleanup := a.cleanup
			a.cleanup = func() {
				ct.close()
				if cleanup != nil {
					cleanup()
				}
			}
			return cs, a, func() { abort() }, nil
		}
		abort()
		if aerr := status.authErr(); aerr != nil {
			// A login is needed: what server/discover was told, which
			// the SDK drops when it falls back to initialize (which the
			// server may then refuse for another reason).
			err = aerr
		}
		errs = append(errs, status.explain("connect", err))
		if ctx.Err() != nil {
			break
		}
	}
	// The server never finished initialize: kill it now, reap it later.
	a.kill()
	cleanup := a.cleanup
	a.cleanup = func() {
		for _, ct := range tried {
			ct.close()
		}
		if cleanup != nil {
			cleanup()
		}
	}
	return nil, a, func() {}, errors.Join(errs...)
}

// capturingTransport remembers the connection its transport made, so that it
// can be closed from outside the SDK.
type capturingTransport struct {
	mcp.Transport
	ctx    context.Context // for the connection's lifetime
	cancel context.CancelFunc
	mu     sync.Mutex
	conn   mcp.Connection
}

func (t *capturingTransport) Connect(context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(t.ctx)
	t.mu.Lock()
	t.conn = conn
	t.mu.Unlock()
	return conn, err
}

func (t *capturingTransport) close() {
	t.cancel()
	t.mu.Lock()
	conn := t.conn
	t.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}
