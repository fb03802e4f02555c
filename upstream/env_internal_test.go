package upstream

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/config"
)

func TestEnviron(t *testing.T) {
	parent := []string{
		"PATH=/bin", "HOME=/home/u", "OPENAI_API_KEY=sk-1", "AWS_PROFILE=dev", "AWS_REGION=eu",
		"KUBECONFIG=/k", "LANG=C.UTF-8", "TOKEN=parent", "NOEQUALS", "=C:=C:\\x", "TERM=xterm",
	}
	tests := []struct {
		name    string
		windows bool
		sc      config.Server
		want    []string
	}{
		{"defaults only", false, config.Server{},
			[]string{"PATH=/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm"}},
		{"env added, sorted, winning", false, config.Server{Env: map[string]string{"TOKEN": "mine", "HOME": "/h", "A": "1"}},
			[]string{"PATH=/bin", "LANG=C.UTF-8", "TERM=xterm", "A=1", "HOME=/h", "TOKEN=mine"}},
		{"names and globs", false, config.Server{InheritEnv: []string{"AWS_*", "KUBECONFIG", "NOPE"}},
			[]string{"PATH=/bin", "HOME=/home/u", "AWS_PROFILE=dev", "AWS_REGION=eu", "KUBECONFIG=/k", "LANG=C.UTF-8", "TERM=xterm"}},
		{"everything", false, config.Server{InheritEnv: []string{"*"}, Env: map[string]string{"TOKEN": "mine"}},
			[]string{"PATH=/bin", "HOME=/home/u", "OPENAI_API_KEY=sk-1", "AWS_PROFILE=dev", "AWS_REGION=eu", "KUBECONFIG=/k", "LANG=C.UTF-8", "TERM=xterm", "TOKEN=mine"}},
		{"case matters off Windows", false, config.Server{InheritEnv: []string{"aws_profile"}, Env: map[string]string{"path": "x"}},
			[]string{"PATH=/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm", "path=x"}},
		{"windows defaults", true, config.Server{},
			[]string{"PATH=/bin"}},
		{"windows ignores case", true, config.Server{InheritEnv: []string{"aws_*"}, Env: map[string]string{"Path": `C:\bin`}},
			[]string{"AWS_PROFILE=dev", "AWS_REGION=eu", `Path=C:\bin`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := environFor(tt.sc, tt.windows, parent)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("environ (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("windows names", func(t *testing.T) {
		got := environFor(config.Server{}, true, []string{"SystemRoot=C:\\Windows", "UserProfile=C:\\u", "Secret=x", "TEMP=C:\\t"})
		want := []string{"SystemRoot=C:\\Windows", "UserProfile=C:\\u", "TEMP=C:\\t"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("environ (-want +got):\n%s", diff)
		}
	})
}

// TestEnvironChild runs a real child with the computed environment and
// reads back what it sees.
func TestEnvironChild(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses /bin/sh")
	}
	t.Setenv("TOOLSIFT_TEST_SECRET", "leaked")
	t.Setenv("PATH", os.Getenv("PATH"))
	names := func(sc config.Server) []string {
		t.Helper()
		cmd := exec.Command("/bin/sh", "-c", "env")
		cmd.Env = environ(sc, os.Environ())
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if name, _, ok := strings.Cut(line, "="); ok {
				names = append(names, name)
			}
		}
		return names
	}
	got := names(config.Server{Env: map[string]string{"MINE": "1"}})
	if slices.Contains(got, "TOOLSIFT_TEST_SECRET") {
		t.Errorf("the child sees TOOLSIFT_TEST_SECRET without opting in: %q", got)
	}
	if !slices.Contains(got, "PATH") || !slices.Contains(got, "MINE") {
		t.Errorf("the child's environment %q lacks PATH or MINE", got)
	}
	for _, n := range got {
		// The shell adds a few of its own (PWD, SHLVL, _).
		if !slices.Contains(defaultEnv[false], n) && n != "MINE" && n != "PWD" && n != "SHLVL" && n != "_" && n != "OLDPWD" {
			t.Errorf("the child sees %s, which is neither a default nor in Env", n)
		}
	}
	if got := names(config.Server{InheritEnv: []string{"TOOLSIFT_TEST_*"}}); !slices.Contains(got, "TOOLSIFT_TEST_SECRET") {
		t.Errorf("the child does not see TOOLSIFT_TEST_SECRET although it opted in: %q", got)
	}
}
