package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/cmd/internal/cli"
	"github.com/toolsift/toolsift/internal/usagekey"
	learn "github.com/toolsift/toolsift/usage"
)

// TestUsageCommand: toolsift usage lists and exports what the store's
// usage memory holds, filtered by scope, user, tool and age, and forgets
// what matches (a filter or --all required), deleting a scope left empty;
// a damaged value is an error naming its key.
func TestUsageCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := cli.OpenStore(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := learn.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, c := range []struct {
		scope, user, tool string
		at                time.Time
	}{
		{"a", "alice", "kb__create_entities", now},
		{"a", "bob", "fs__read_file", now.Add(-48 * time.Hour)},
		{"", "", "weather__get_forecast", now},
	} {
		if err := mem.Record(learn.Event{Caller: learn.Caller{Scope: c.scope, Identity: c.user}, Tool: c.tool, Hash: "h",
			Request: learn.Request{Terms: learn.HashTerms(strings.Fields("a request of " + c.user))}, Time: c.at}); err != nil {
			t.Fatal(err)
		}
	}
	for _, scope := range mem.Scopes() {
		if err := st.Put(ctx, usagekey.Key(scope), mem.Marshal(scope)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	export := func(args ...string) []entryJSON {
		t.Helper()
		code, out, stderr := runCmd(t, append([]string{"usage", "export", "--store", dir}, args...)...)
		if code != 0 {
			t.Fatalf("usage export %q: exit %d: %s", args, code, stderr)
		}
		var got []entryJSON
		for l := range strings.Lines(out) {
			var e entryJSON
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("export line %q: %v", l, err)
			}
			got = append(got, e)
		}
		return got
	}
	users := func(es []entryJSON) string {
		var u []string
		for _, e := range es {
			u = append(u, e.Scope+"/"+e.User+"/"+e.Tool)
		}
		return strings.Join(u, " ")
	}
	if got, want := users(export()), "/"+"/weather__get_forecast a/alice/kb__create_entities a/bob/fs__read_file"; got != want {
		t.Errorf("export = %q, want %q", got, want)
	}
	if got, want := users(export("--scope", "a", "--before", "24h")), "a/bob/fs__read_file"; got != want {
		t.Errorf("export --scope a --before 24h = %q, want %q", got, want)
	}
	if got := export("--tool", "kb__create_entities"); len(got) != 1 || got[0].Count != 1 || got[0].User != "alice" || got[0].Text != "" {
		t.Errorf("export --tool kb__create_entities = %+v, want alice's one call, no text", got)
	}
	code, out, stderr := runCmd(t, "usage", "list", "--store", dir, "--scope", "a")
	if code != 0 || !strings.Contains(out, "SCOPE") || strings.Count(out, "\n") != 3 || !strings.Contains(out, "kb__create_entities") {
		t.Errorf("usage list --scope a: exit %d, out:\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runCmd(t, "usage", "forget", "--store", dir); code != 2 || !strings.Contains(stderr, "--all") {
		t.Errorf("forget without a filter: exit %d, %s; want 2 asking for a filter", code, stderr)
	}
	if code, out, stderr := runCmd(t, "usage", "forget", "--store", dir, "--user", "alice"); code != 0 || !strings.Contains(out, "Forgot 1 calls") {
		t.Errorf("forget --user alice: exit %d, %s%s", code, out, stderr)
	}
	if got, want := users(export()), "/"+"/weather__get_forecast a/bob/fs__read_file"; got != want {
		t.Errorf("after forget --user alice, export = %q, want %q", got, want)
	}
	if code, out, stderr := runCmd(t, "usage", "forget", "--store", dir, "--scope", "", "--all"); code != 0 || !strings.Contains(out, "Forgot 1 calls") {
		t.Errorf("forget --scope '' --all: exit %d, %s%s", code, out, stderr)
	}
	st, err = cli.OpenStore(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if keys, _ := st.List(ctx, usagekey.Prefix); len(keys) != 1 || keys[0] != usagekey.Key("a") {
		t.Errorf("keys after forgetting scope '': %v, want only %s", keys, usagekey.Key("a"))
	}
	if err := st.Put(ctx, usagekey.Key("b"), []byte("damaged")); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "usage", "list", "--store", dir); code != 1 || !strings.Contains(stderr, usagekey.Key("b")) {
		t.Errorf("list over a damaged scope: exit %d, %s; want 1 naming %s", code, stderr, usagekey.Key("b"))
	}
}
