package npmtest

import (
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
// --oauth), as StartTSOAuth started it.
type TSOAuth struct {
	// MCPPort serves http://localhost:MCPPort/mcp; AuthPort the
	// authorization server.
	MCPPort, AuthPort int
	// Out is what the server printed (standard output and error).
	Out *testenv.Buffer
}

// URL is the server's MCP endpoint.
func (s *TSOAuth) URL() string { return fmt.Sprintf("http://localhost:%d/mcp", s.MCPPort) }

// startTries bounds the starts that lose a port to another process.
const startTries = 5

// StartTSOAuth starts the example server of the SDK in sdkDir (a
// node_modules/@modelcontextprotocol/sdk folder) with --oauth and args on
// two free loopback ports, and waits until both answer their metadata;
// the server is killed when the test ends. The ports are free when they
// are picked, not held: a start that finds one taken (EADDRINUSE, another
// test's listener got there first; the server prints it and may keep its
// other listener) is tried again on others. A server
// that exits before it answers fails the test at once, with its output,
// rather than at the test's time limit.
func StartTSOAuth(t testing.TB, sdkDir string, args ...string) *TSOAuth {
	t.Helper()
	for try := 1; ; try++ {
		s, exited := startTSOAuth(t, sdkDir, args)
		err := s.wait(exited)
		if err == nil {
			return s
		}
		if !strings.Contains(s.Out.String(), "EADDRINUSE") || try == startTries {
			t.Fatalf("the TypeScript example server (try %d): %v\n%s", try, err, s.Out.String())
		}
	}
}

// exit is a started process's end: done is closed once it has exited,
// with err.
type exit struct {
	done chan struct{}
	err  error
}

func startTSOAuth(t testing.TB, sdkDir string, args []string) (*TSOAuth, *exit) {
	t.Helper()
	s := &TSOAuth{Out: &testenv.Buffer{}}
	s.MCPPort = freePort(t)
	for s.AuthPort = freePort(t); s.AuthPort == s.MCPPort; s.AuthPort = freePort(t) {
	}
	cmd := exec.Command("node", append([]string{filepath.Join(sdkDir, "dist", "esm", "examples", "server", "simpleStreamableHttp.js"), "--oauth"}, args...)...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("MCP_PORT=%d", s.MCPPort), fmt.Sprintf("MCP_AUTH_PORT=%d", s.AuthPort))
	cmd.Stdout, cmd.Stderr = s.Out, s.Out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &exit{done: make(chan struct{})}
	go func() { e.err = cmd.Wait(); close(e.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-e.done
	})
	return s, e
}

// wait waits until both of s's metadata documents answer 200, and returns
// an error when the server exits first or the test's time runs out.
func (s *TSOAuth) wait(e *exit) error {
	deadline := time.Now().Add(testenv.WaitLimit())
	for _, u := range []string{
		fmt.Sprintf("http://localhost:%d/.well-known/oauth-protected-resource/mcp", s.MCPPort),
		fmt.Sprintf("http://localhost:%d/.well-known/oauth-authorization-server", s.AuthPort),
	} {
		for {
			resp, err := http.Get(u)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
				err = fmt.Errorf("%s: %s", u, resp.Status)
			}
			select {
			case <-e.done:
				return fmt.Errorf("it exited before answering (%v): %v", e.err, err)
			case <-time.After(50 * time.Millisecond):
			}
			if strings.Contains(s.Out.String(), "EADDRINUSE") {
				// One of its listeners failed; the other may live on.
				return fmt.Errorf("a port was taken: %v", err)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("it did not come up: %v", err)
			}
		}
	}
	return nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
