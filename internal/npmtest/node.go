package npmtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/testenv"
)

// StartNode runs node with args in dir, with env and PORT=N beside the
// process's own environment for a free loopback port N, until the test
// ends, and returns N once 127.0.0.1:N accepts connections, with what the
// process printed. As StartTSOAuthScript does, a start that finds the
// port taken (EADDRINUSE: it was free when picked, not held) is tried
// again on another, and a process that exits before it listens fails the
// test at once, with its output, rather than at the test's time limit.
func StartNode(t testing.TB, dir string, env []string, args ...string) (port int, out *testenv.Buffer) {
	t.Helper()
	out = &testenv.Buffer{}
	for try := 1; ; try++ {
		port = freePort(t)
		cmd := exec.Command("node", args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), env...), "PORT="+strconv.Itoa(port))
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e := &exit{cmd: cmd, done: make(chan struct{})}
		go func() { e.err = cmd.Wait(); close(e.done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-e.done
		})
		err := listening(e, port, out, len(out.String()))
		if err == nil {
			return port, out
		}
		_ = cmd.Process.Kill()
		<-e.done
		if !errors.Is(err, errPortTaken) || try == startTries {
			t.Fatalf("node %s (try %d): %v\n%s", strings.Join(args, " "), try, err, out.String())
		}
	}
}

// listening waits until 127.0.0.1:port accepts a connection, and returns
// an error when e's process exits first, says the port was taken (in
// what it printed to out after seen bytes), or the test's time runs out.
func listening(e *exit, port int, out *testenv.Buffer, seen int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	taken := func() bool { return strings.Contains(out.String()[seen:], "EADDRINUSE") }
	deadline := time.Now().Add(testenv.WaitLimit())
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-e.done:
			if taken() {
				return fmt.Errorf("%w (it exited: %v)", errPortTaken, e.err)
			}
			return fmt.Errorf("it exited before listening on %s (%v): %v", addr, e.err, err)
		case <-time.After(50 * time.Millisecond):
		}
		if taken() {
			return fmt.Errorf("%w: %v", errPortTaken, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("it did not listen on %s: %v", addr, err)
		}
	}
}
