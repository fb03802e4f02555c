package npmtest

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// fatalTB is a testing.TB whose Fatal ends the goroutine (as the real one
// does) after keeping the message; its cleanups run when the test's do.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// startNode runs StartNode with a fatalTB, on a goroutine of its own:
// the port it returned, or what it failed with.
func startNode(t *testing.T, script string) (int, string) {
	f := &fatalTB{TB: t}
	port := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		port, _ = StartNode(f, t.TempDir(), nil, "-e", script)
	}()
	<-done
	return port, f.msg
}

// TestStartNode: a process that listens on $PORT is waited for; one that
// exits first fails at once with its output; one that says its port was
// taken is started again on others, startTries times.
func TestStartNode(t *testing.T) {
	port, msg := startNode(t, `require("net").createServer(() => {}).listen(Number(process.env.PORT), "127.0.0.1")`)
	if msg != "" {
		t.Fatalf("a listening server: %s", msg)
	}
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("the server's port %d: %v", port, err)
	}
	c.Close()

	if _, msg := startNode(t, `console.error("no config here"); process.exit(3)`); !strings.Contains(msg, "(try 1): it exited before listening") || !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "no config here") {
		t.Errorf("a server that exits: %q, want it failed at its first try with its status and output", msg)
	}
	if _, msg := startNode(t, `console.error("Error: listen EADDRINUSE: address already in use"); process.exit(1)`); !strings.Contains(msg, fmt.Sprintf("(try %d): a port was taken", startTries)) {
		t.Errorf("a server whose port is taken: %q, want %d tries", msg, startTries)
	}
}
