package upstream_test

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStdioEnvironment starts real servers through the Hub and checks what
// they see of the Hub's environment: only the defaults, their env and what
// they opt into with inheritEnv.
func TestStdioEnvironment(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses /bin/sh")
	}
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	t.Setenv("TOOLSIFT_TEST_SECRET", "leaked")
	// The test server reports TESTSERVER_VALUE; a shell copies what we want
	// to observe into it.
	show := func(v string) []string {
		return []string{"-c", `TESTSERVER_VALUE="` + v + `" exec "$0"`, bin}
	}
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		"plain":  map[string]any{"command": "/bin/sh", "args": show("${TOOLSIFT_TEST_SECRET-unset}")},
		"named":  map[string]any{"command": "/bin/sh", "args": show("${TOOLSIFT_TEST_SECRET-unset}"), "inheritEnv": []string{"TOOLSIFT_TEST_SECRET"}},
		"glob":   map[string]any{"command": "/bin/sh", "args": show("${TOOLSIFT_TEST_SECRET-unset}"), "inheritEnv": []string{"TOOLSIFT_*"}},
		"all":    map[string]any{"command": "/bin/sh", "args": show("${TOOLSIFT_TEST_SECRET-unset}"), "inheritEnv": true},
		"config": map[string]any{"command": "/bin/sh", "args": show("${TOOLSIFT_TEST_SECRET-unset}"), "env": map[string]string{"TOOLSIFT_TEST_SECRET": "from the config"}},
		"home":   map[string]any{"command": "/bin/sh", "args": show("${HOME-unset}")},
	})
	hub := startHub(t, cfg, nil, nil)
	want := map[string]string{
		"plain":  "unset",
		"named":  "leaked",
		"glob":   "leaked",
		"all":    "leaked",
		"config": "from the config",
		"home":   os.Getenv("HOME"),
	}
	got := map[string]string{}
	for server := range want {
		res, err := hub.Call(context.Background(), server+"__where", nil)
		if err != nil {
			t.Fatalf("Call(%s__where): %v (status %+v)", server, err, statusOf(t, hub, server))
		}
		var where map[string]string
		if err := json.Unmarshal([]byte(res.Content), &where); err != nil {
			t.Fatal(err)
		}
		got[server] = where["value"]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the servers see (-want +got):\n%s", diff)
	}
}
