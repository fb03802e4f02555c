package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// waitLimit bounds every wait in these tests: a hang guard that scales with
// the test binary's -timeout, not a timing assertion (testenv.WaitLimit).
var waitLimit = testenv.WaitLimit

// memServer serves srv to the Hub over an in-memory pipe, a fresh one per
// connection attempt.
func memServer(srv *mcp.Server) config.Server {
	return config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		_, conn, err := connectPipe(ctx, srv)
		return conn, err
	}}
}

// connectPipe connects srv to one end of an in-memory pipe and returns its
// session and the other end, for a config.Server's Dial.
func connectPipe(ctx context.Context, srv *mcp.Server) (*mcp.ServerSession, io.ReadWriteCloser, error) {
	serverSide, clientSide := net.Pipe()
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: serverSide, Writer: serverSide}, nil)
	if err != nil {
		clientSide.Close()
		return nil, nil, err
	}
	return ss, clientSide, nil
}

// newServer returns a go-sdk server with a text tool per name; each answers
// "<server>:<tool>".
func newServer(name string, opts *mcp.ServerOptions, tools ...string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, opts)
	for _, tool := range tools {
		addTextTool(srv, tool, "Tool "+tool+" of "+name+".", name+":"+tool)
	}
	return srv
}

func addTextTool(srv *mcp.Server, name, description, answer string) {
	srv.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil
		})
}

// changes collects what a Hub emits to its change sink.
type changes chan tool.Change

func (c changes) onChange(_ context.Context, ch tool.Change) error { c <- ch; return nil }

// next returns the next change, failing the test if none comes.
func (c changes) next(t *testing.T) tool.Change {
	t.Helper()
	select {
	case ch := <-c:
		return ch
	case <-time.After(waitLimit()):
		t.Fatal("no change event arrived")
		return tool.Change{}
	}
}

// changedTool waits for the change that has the tool name among its
// Changed, failing the test if none comes; the changes before it are
// dropped.
func (c changes) changedTool(t *testing.T, name string) {
	t.Helper()
	for {
		ch := c.next(t)
		if slices.ContainsFunc(ch.Changed, func(tl tool.Tool) bool { return tl.Name == name }) {
			return
		}
	}
}

// summary reduces a change to names, for cmp.Diff.
type changeSummary struct {
	Server                  string
	Added, Changed, Removed []string
}

func summarize(ch tool.Change) changeSummary {
	s := changeSummary{Server: ch.Server, Removed: ch.Removed}
	for _, t := range ch.Added {
		s.Added = append(s.Added, t.Name)
	}
	for _, t := range ch.Changed {
		s.Changed = append(s.Changed, t.Name)
	}
	return s
}

func toolNames(tools []tool.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// startHub connects a Hub to cfg's servers, with apply as its change sink
// (nil: none). A server whose config and opts set no timeout gets
// waitLimit, not the Hub's 30s default: a server starting on a loaded
// machine is slow, not broken.
func startHub(t testing.TB, cfg *config.Config, opts *upstream.HubOptions, apply func(context.Context, tool.Change) error) *upstream.Hub {
	t.Helper()
	if opts == nil {
		opts = &upstream.HubOptions{}
	}
	if opts.Timeout == 0 {
		o := *opts
		o.Timeout = waitLimit()
		opts = &o
	}
	hub, err := upstream.NewHub(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hub.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
	defer cancel()
	if err := hub.Connect(ctx, apply); err != nil {
		t.Fatal(err)
	}
	return hub
}

func statusOf(t *testing.T, hub *upstream.Hub, server string) upstream.ServerStatus {
	t.Helper()
	for _, st := range hub.Status() {
		if st.Name == server {
			return st
		}
	}
	t.Fatalf("no status for server %s", server)
	return upstream.ServerStatus{}
}

// checkGoroutines fails the test if goroutines started during it are still
// running after its cleanups (the Hub's Close included). Call it first, so
// that its cleanup runs last. Tests using it must not run in parallel.
var checkGoroutines = testenv.CheckGoroutines

// children lists this process's child processes, zombies included, as
// "pid state command". Linux only: elsewhere it skips the check.
func children(t *testing.T) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("child process check reads /proc (linux only)")
	}
	me := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == me {
			out = append(out, fmt.Sprintf("%s %s %s", strings.Fields(s)[0], fields[0], s[strings.IndexByte(s, '(')+1:i]))
		}
	}
	return out
}

// checkNoChildren fails the test if child processes are left (running or
// zombie) once its cleanups have run. Call it first.
func checkNoChildren(t *testing.T) {
	t.Helper()
	before := len(children(t))
	t.Cleanup(func() {
		deadline := time.Now().Add(waitLimit())
		for {
			left := children(t)
			if len(left) <= before {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("child processes left after Close: %v", left)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// dirStore is the store.Dir in dir, as toolsift opens a cache folder.
func dirStore(t testing.TB, dir string) *store.Dir {
	t.Helper()
	d, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
