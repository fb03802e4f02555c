package testserver_test

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/internal/testserver"
)

func TestMain(m *testing.M) {
	testserver.Serve()
	os.Exit(m.Run())
}

// TestCommand: the command Command returns is this test binary serving the
// test server's tools over stdio (no test runs in it), and -mode exit
// fails as documented.
func TestCommand(t *testing.T) {
	bin := testserver.Command(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command(bin, "-misbehave")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"block", "crash", "echo", "flood", "log", "wedge", "where"}; !slices.Equal(names, want) {
		t.Errorf("tools = %q, want %q", names, want)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	out, err := exec.Command(bin, "-mode", "exit").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || string(out) != "testserver: fatal: TESTSERVER_TOKEN is not set\n" {
		t.Errorf("-mode exit: %v, output %q; want exit status 1 and the fatal line", err, out)
	}
}
