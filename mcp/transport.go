package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopGrace is how long a stdio server gets to exit after its stdin is
// closed, and again after SIGTERM, before it is killed.
const stopGrace = 2 * time.Second

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
	cleanup func() // kills what is left of the process group; may be nil
}

// transports returns the transports to try, in order, for one connection
// attempt of sc (more than one only for a url without a type).
func (h *Hub) transports(ctx context.Context, name string, sc ServerConfig) ([]sdk.Transport, *attempt, error) {
	switch {
	case sc.Transport != nil:
		t, err := sc.Transport(ctx)
		if err != nil {
			return nil, nil, err
		}
		return []sdk.Transport{t}, &attempt{}, nil
	case sc.Command != "":
		return h.commandTransport(name, sc)
	default:
		client := h.opts.HTTPClient
		if len(sc.Headers) > 0 {
			c := *client
			base := c.Transport
			if base == nil {
				base = http.DefaultTransport
			}
			c.Transport = &headerTransport{base: base, headers: sc.Headers}
			client = &c
		}
		streamable := &sdk.StreamableClientTransport{Endpoint: sc.URL, HTTPClient: client, MaxRetries: -1}
		sse := &sdk.SSEClientTransport{Endpoint: sc.URL, HTTPClient: client}
		switch sc.Type {
		case "http":
			return []sdk.Transport{streamable}, &attempt{}, nil
		case "sse":
			return []sdk.Transport{sse}, &attempt{}, nil
		default:
			return []sdk.Transport{streamable, sse}, &attempt{}, nil
		}
	}
}

func (h *Hub) commandTransport(name string, sc ServerConfig) ([]sdk.Transport, *attempt, error) {
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
	cmd.Env = sc.environ(os.Environ())
	a := &attempt{stderr: &tailBuffer{max: stderrTailSize}, cmd: cmd}
	cmd.Stderr = a.stderr
	// Don't wait forever for stderr when a grandchild keeps it open.
	cmd.WaitDelay = stopGrace
	killGroup := setProcessGroup(cmd)
	t := &stdioTransport{cmd: cmd, noise: a.stderr, killGroup: killGroup}
	a.cleanup = t.stop
	return []sdk.Transport{t}, a, nil
}

// stdioTransport runs a server as a child process and speaks newline-
// delimited JSON over its stdin and stdout, like sdk.CommandTransport, but
// tolerates what real servers do: lines on stdout that are not JSON-RPC
// (banners, logs) are moved to the stderr tail instead of breaking the
// session, and stopping also kills what the server left in its process
// group.
type stdioTransport struct {
	cmd       *exec.Cmd
	noise     io.Writer
	killGroup func()

	once   sync.Once
	stdin  io.Closer
	waited error
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	t.stdin = stdin
	pipes := &sdk.IOTransport{
		Reader: &jsonLines{r: bufio.NewReaderSize(stdout, 64<<10), noise: t.noise},
		Writer: &stdinCloser{WriteCloser: stdin, stop: t.stop},
	}
	return pipes.Connect(ctx)
}

// stop ends the process the way the MCP spec asks: close its stdin, wait,
// SIGTERM, wait, SIGKILL; then reap it. It is idempotent.
func (t *stdioTransport) stop() {
	t.once.Do(func() {
		if t.cmd.Process == nil {
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
				_ = t.cmd.Process.Kill()
				t.waited = <-done
			}
		}
		if t.killGroup != nil {
			t.killGroup()
		}
	})
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

// jsonLines passes on the lines of r that look like JSON-RPC messages and
// writes the others to noise.
type jsonLines struct {
	r     *bufio.Reader
	noise io.Writer
	buf   []byte // rest of the current line, not yet read
}

func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.buf) == 0 {
		line, err := j.r.ReadBytes('\n')
		if len(line) > 0 {
			trimmed := bytes.TrimLeft(line, " \t\r")
			if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
				j.buf = line
			} else if len(bytes.TrimSpace(line)) > 0 {
				_, _ = j.noise.Write(append([]byte("[stdout] "), line...))
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

// Close does nothing: the connection is closed through stdin.
func (j *jsonLines) Close() error { return nil }

// headerTransport adds configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// connectSession runs one connection attempt: start the transport,
// initialize. When ctx ends, the connection is closed even if the SDK is
// blocked writing to a peer that does not read (a hung stdio server, an
// in-memory pipe nobody serves); keep stays in force until the caller calls
// it, so listing tools is covered too.
func (h *Hub) connectSession(ctx context.Context, name string, sc ServerConfig, client *sdk.Client) (cs *sdk.ClientSession, a *attempt, keep func(), err error) {
	ts, a, err := h.transports(ctx, name, sc)
	if err != nil {
		return nil, nil, func() {}, err
	}
	version := sc.ProtocolVersion
	switch version {
	case "":
		version = h.opts.ProtocolVersion
	case "latest":
		version = "" // the SDK's default
	}
	var errs []error
	for _, t := range ts {
		// The SSE transport ties its event stream to the ctx given to
		// Connect, so that ctx must live as long as the session, not just
		// this attempt.
		ct := &capturingTransport{Transport: t}
		ct.ctx, ct.cancel = context.WithCancel(h.life)
		stop := context.AfterFunc(ctx, ct.close)
		cs, err := client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err == nil {
			cleanup := a.cleanup
			a.cleanup = func() {
				ct.cancel()
				if cleanup != nil {
					cleanup()
				}
			}
			return cs, a, func() { stop() }, nil
		}
		stop()
		ct.close()
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if a.cleanup != nil {
		a.cleanup()
	}
	return nil, a, func() {}, errors.Join(errs...)
}

// capturingTransport remembers the connection its transport made, so that it
// can be closed from outside the SDK.
type capturingTransport struct {
	sdk.Transport
	ctx    context.Context // for the connection's lifetime
	cancel context.CancelFunc
	mu     sync.Mutex
	conn   sdk.Connection
}

func (t *capturingTransport) Connect(context.Context) (sdk.Connection, error) {
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
