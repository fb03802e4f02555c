package npmtest

import (
	"errors"
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
		seen := len(out.String()) // what earlier tries printed
		e, err := startCmd(cmd, out)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-e.done
		})
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		err = waitUp(e, out, seen, "listening on "+addr, func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
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
