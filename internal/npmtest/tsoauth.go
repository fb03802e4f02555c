package npmtest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/testenv"
)

// TSOAuth is the TypeScript SDK's example server with its own
// authorization server (dist/esm/examples/server/simpleStreamableHttp.js
// --oauth, or a script that wraps it), as StartTSOAuth started it.
type TSOAuth struct {
	// MCPPort serves http://localhost:MCPPort/mcp; AuthPort the
	// authorization server.
	MCPPort, AuthPort int
	// Out is what the server printed (standard output and error), over
	// every start.
	Out *testenv.Buffer

	t      testing.TB
	script string
	env    []string
	args   []string
	run    *exit // the running process, nil once stopped
}

// exit is a started process's end: done is closed once it has exited,
// with err.
type exit struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startTries bounds the starts that lose a port to another process.
const startTries = 5

// errPortTaken: the server said a port it was given is in use.
var errPortTaken = errors.New("a port was taken (EADDRINUSE)")

// StartTSOAuth starts the example server of the SDK in sdkDir (a
// node_modules/@modelcontextprotocol/sdk folder) with --oauth and args;
// see StartTSOAuthScript.
func StartTSOAuth(t testing.TB, sdkDir string, args ...string) *TSOAuth {
	t.Helper()
	return StartTSOAuthScript(t, filepath.Join(sdkDir, "dist", "esm", "examples", "server", "simpleStreamableHttp.js"), nil, args...)
}

// StartTSOAuthScript runs script (the example server, or a script that
// wraps it) under node with --oauth and args, and env beside the
// process's own, on two free loopback ports, and waits until both answer
// their metadata; the server is killed when the test ends. The ports are
// free when they are picked, not held: a start that finds one taken
// (EADDRINUSE, another test's listener got there first; the server
// prints it and may keep its other listener) is tried again on others. A
// server that exits before it answers fails the test at once, with its
// output, rather than at the test's time limit.
func StartTSOAuthScript(t testing.TB, script string, env []string, args ...string) *TSOAuth {
	t.Helper()
	s := &TSOAuth{Out: &testenv.Buffer{}, t: t, script: script, env: env, args: args}
	t.Cleanup(s.Stop)
	for try := 1; ; try++ {
		s.MCPPort = freePort(t)
		for s.AuthPort = freePort(t); s.AuthPort == s.MCPPort; s.AuthPort = freePort(t) {
		}
		err := s.start()
		if err == nil {
			return s
		}
		s.Stop()
		if !errors.Is(err, errPortTaken) || try == startTries {
			t.Fatalf("the TypeScript example server (try %d): %v\n%s", try, err, s.Out.String())
		}
	}
}

// URL is the server's MCP endpoint.
func (s *TSOAuth) URL() string { return fmt.Sprintf("http://localhost:%d/mcp", s.MCPPort) }

// Restart stops the server and starts it again on the same ports (what
// it kept in memory is gone), and waits until it answers; a server that
// does not fails the test.
func (s *TSOAuth) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.Stop()
		s.t.Fatalf("the TypeScript example server, started again: %v\n%s", err, s.Out.String())
	}
}

// Stop kills the server and waits for it to exit; nothing when it is
// not running.
func (s *TSOAuth) Stop() {
	if s.run == nil {
		return
	}
	_ = s.run.cmd.Process.Kill()
	<-s.run.done
	s.run = nil
}

// start starts the server on s's ports and waits until it answers.
func (s *TSOAuth) start() error {
	cmd := exec.Command("node", append([]string{s.script, "--oauth"}, s.args...)...)
	cmd.Env = append(append(os.Environ(), s.env...), fmt.Sprintf("MCP_PORT=%d", s.MCPPort), fmt.Sprintf("MCP_AUTH_PORT=%d", s.AuthPort))
	seen := len(s.Out.String()) // what earlier starts printed
	e, err := startCmd(cmd, s.Out)
	if err != nil {
		return err
	}
	s.run = e
	return s.wait(e, seen)
}

// startCmd starts cmd with its output to out, and waits for its exit in
// the background.
func startCmd(cmd *exec.Cmd, out *testenv.Buffer) (*exit, error) {
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e := &exit{cmd: cmd, done: make(chan struct{})}
	go func() { e.err = cmd.Wait(); close(e.done) }()
	return e, nil
}

// wait waits until both of s's metadata documents answer 200, and returns
// an error when the server exits first, says a port was taken, or the
// test's time runs out (waitUp); seen is what earlier starts printed.
func (s *TSOAuth) wait(e *exit, seen int) error {
	for _, u := range []string{
		fmt.Sprintf("http://localhost:%d/.well-known/oauth-protected-resource/mcp", s.MCPPort),
		fmt.Sprintf("http://localhost:%d/.well-known/oauth-authorization-server", s.AuthPort),
	} {
		err := waitUp(e, s.Out, seen, "answering", func() error {
			resp, err := probe.Get(u)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", u, resp.Status)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitUp calls up every 50 ms until it returns nil, and returns an error
// when e's process exits first (before what it was to do), says a port was
// taken (EADDRINUSE, in what it printed to out after its first seen
// bytes), or the test's time runs out: each with up's last error.
func waitUp(e *exit, out *testenv.Buffer, seen int, what string, up func() error) error {
	taken := func() bool { return strings.Contains(out.String()[seen:], "EADDRINUSE") }
	deadline := time.Now().Add(testenv.WaitLimit())
	for {
		err := up()
		if err == nil {
			return nil
		}
		select {
		case <-e.done:
			if taken() {
				return fmt.Errorf("%w (it exited: %v)", errPortTaken, e.err)
			}
			return fmt.Errorf("it exited before %s (%v): %v", what, e.err, err)
		case <-time.After(50 * time.Millisecond):
		}
		if taken() {
			// One of its listeners failed; another may live on.
			return fmt.Errorf("%w: %v", errPortTaken, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("it did not come up: %v", err)
		}
	}
}

// probe asks for the metadata: a listener that accepts and never
// answers (another process's, on a port taken after it was picked) is not
// waited for past a second.
var probe = &http.Client{Timeout: time.Second}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
