package toolsift_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
)

// TestPins: tools are pinned from the config ("alwaysLoad" for a whole
// server, "alwaysLoadTools" for some of its tools, by the server's names)
// and from Options.Pin (names as listed, or globs); a pinned tool is
// offered at every step whatever the query, and a pin that matches nothing
// is a warning naming it, in Warnings (and on stderr when there is no
// Logger: TestFailedServerWarns).
func TestPins(t *testing.T) {
	ok := func(context.Context, json.RawMessage) (string, error) { return "ok", nil }
	server := func(names ...string) config.Server {
		var tools []upstream.LocalTool
		for _, n := range names {
			tools = append(tools, upstream.LocalTool{Name: n, Description: "The " + strings.ReplaceAll(n, "_", " ") + " tool.", Handler: ok})
		}
		s, err := upstream.LocalServer(tools...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	notes, mail, files, off := server("add_note", "list_notes"), server("send_email", "read_inbox"), server("read_file", "write_file", "delete_file"), server("reboot")
	notes.AlwaysLoad = true
	files.AlwaysLoadTools = []string{"read_*", "chmod"}
	off.AlwaysLoad, off.Disabled = true, true // disabled: not a pin, no warning
	cfg := &config.Config{Servers: map[string]config.Server{"notes": notes, "mail": mail, "files": files, "off": off}}

	ctx := context.Background()
	ts, err := toolsift.OpenConfig(ctx, cfg, &toolsift.Options{
		Pin:    []string{"mail__send_*", "nothing__here"},
		K:      1,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()

	want := []string{"files__read_file", "mail__send_email", "notes__add_note", "notes__list_notes"}
	if diff := cmp.Diff(want, ts.Pinned()); diff != "" {
		t.Errorf("Pinned (-want +got):\n%s", diff)
	}
	wantWarnings := []string{`alwaysLoadTools of server "files": "chmod" matches no tool`, `pinned tool "nothing__here" matches no tool`}
	if diff := cmp.Diff(wantWarnings, ts.Warnings()); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}

	// A query for something else still gets every pinned tool, first.
	offer, err := ts.Think(ctx, think.Request{Query: retrieval.Query{Task: "delete a file"}})
	if err != nil {
		t.Fatal(err)
	}
	var pinned []string
	for _, m := range offer.Ranked {
		if m.Pinned {
			pinned = append(pinned, m.Tool.Name)
		}
	}
	if diff := cmp.Diff(want, pinned); diff != "" {
		t.Errorf("pinned in the step's ranking (-want +got):\n%s", diff)
	}
	if !slices.Contains(offer.Names(), "files__delete_file") {
		t.Errorf("offered %v: the query's own tool is missing", offer.Names())
	}

	// New pins from Options.Pin alone; a bad glob is an options error.
	nts, err := toolsift.New(ctx, ts.Tools(), &toolsift.Options{Pin: []string{"mail__read_inbox"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer nts.Close()
	if got := nts.Pinned(); !cmp.Equal(got, []string{"mail__read_inbox"}) {
		t.Errorf("New: Pinned = %v", got)
	}
	if _, err := toolsift.New(ctx, nil, &toolsift.Options{Pin: []string{"["}}); !errors.Is(err, toolsift.ErrOptions) || !strings.Contains(err.Error(), `"["`) {
		t.Errorf("bad glob: %v, want ErrOptions naming it", err)
	}
}

// TestFailedServerWarns: with no Logger, a server that fails at Open is
// written to stderr, once, naming the server and its error, while Open
// succeeds, and so are an ignored config line and a pin that matches
// nothing; a Logger set to discard silences them. It runs Open in a child
// process to read its real stderr.
func TestFailedServerWarns(t *testing.T) {
	if cfgPath := os.Getenv("TOOLSIFT_TEST_WARN_CONFIG"); cfgPath != "" {
		opts := &toolsift.Options{Pin: []string{"typo__*"}}
		if os.Getenv("TOOLSIFT_TEST_WARN_QUIET") == "1" {
			opts.Logger = slog.New(slog.DiscardHandler)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
		defer cancel()
		ts, err := toolsift.Open(ctx, cfgPath, opts)
		if err != nil {
			t.Fatal(err)
		}
		_ = ts.Refresh(ctx) // a second look at the failed server warns no more
		ts.Close()
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	// A typo'd path, the mistake a new user makes.
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"typo": {"command": "/nonexistent/toolsift-no-such-server"}}, "extra": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	child := func(quiet string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFailedServerWarns$")
		cmd.Env = append(os.Environ(), "TOOLSIFT_TEST_WARN_CONFIG="+path, "TOOLSIFT_TEST_WARN_QUIET="+quiet)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err != nil {
			t.Fatalf("child: %v\n%s\n%s", err, out, stderr.String())
		}
		return stderr.String()
	}
	got := child("0")
	lines := strings.Split(strings.TrimSpace(got), "\n")
	var failed []string
	for _, l := range lines {
		if strings.Contains(l, "server failed") {
			failed = append(failed, l)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "server=typo") || !strings.Contains(failed[0], "/nonexistent/toolsift-no-such-server") {
		t.Errorf("stderr: want one line naming server typo and its error, got:\n%s", got)
	}
	for _, want := range []string{`unknown top-level field \"extra\" ignored`, `pinned tool \"typo__*\" matches no tool`} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %s:\n%s", want, got)
		}
	}
	if quiet := child("1"); strings.Contains(quiet, "typo") {
		t.Errorf("with a discarding Logger, stderr = %q, want nothing about the server", quiet)
	}
}
