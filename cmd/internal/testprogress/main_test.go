package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// feed gives r the events, as go test -json writes them.
func feed(t *testing.T, r *report, events ...event) {
	t.Helper()
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		r.line(string(b))
	}
}

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestReport(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out, false, t0)
	r.module = "example.com/m"
	feed(t, r,
		event{Time: at(0), Action: "start", Package: "example.com/m/a"},
		event{Time: at(0), Action: "run", Package: "example.com/m/a", Test: "TestOK"},
		event{Time: at(0), Action: "output", Package: "example.com/m/a", Test: "TestOK", Output: "=== RUN   TestOK\n"},
		event{Time: at(0), Action: "output", Package: "example.com/m/a", Test: "TestOK", Output: "    a_test.go:3: a log of a passing test\n"},
		event{Time: at(0), Action: "output", Package: "example.com/m/a", Test: "TestOK", Output: "--- PASS: TestOK (0.00s)\n"},
		event{Time: at(0), Action: "pass", Package: "example.com/m/a", Test: "TestOK"},
		event{Time: at(1), Action: "start", Package: "example.com/m/b"},
		event{Time: at(1), Action: "run", Package: "example.com/m/b", Test: "TestBad"},
		event{Time: at(1), Action: "output", Package: "example.com/m/b", Test: "TestBad", Output: "=== RUN   TestBad\n"},
		event{Time: at(1), Action: "run", Package: "example.com/m/b", Test: "TestBad/sub"},
		event{Time: at(1), Action: "output", Package: "example.com/m/b", Test: "TestBad/sub", Output: "=== RUN   TestBad/sub\n"},
		event{Time: at(2), Action: "output", Package: "example.com/m/b", Test: "TestBad/sub", Output: "    b_test.go:9: got 1, want 2\n"},
		event{Time: at(2), Action: "run", Package: "example.com/m/b", Test: "TestBad/fine"},
		event{Time: at(2), Action: "output", Package: "example.com/m/b", Test: "TestBad/fine", Output: "    b_test.go:7: fine\n"},
	)
	r.tick(at(65))
	feed(t, r,
		event{Time: at(70), Action: "output", Package: "example.com/m/a", Output: "PASS\n"},
		event{Time: at(70), Action: "output", Package: "example.com/m/a", Output: "ok  \texample.com/m/a\t70.0s\n"},
		event{Time: at(70), Action: "pass", Package: "example.com/m/a", Elapsed: 70},
		event{Time: at(70), Action: "output", Package: "example.com/m/b", Test: "TestBad", Output: "--- FAIL: TestBad (69.00s)\n"},
		event{Time: at(70), Action: "output", Package: "example.com/m/b", Test: "TestBad/sub", Output: "    --- FAIL: TestBad/sub (1.00s)\n"},
		event{Time: at(70), Action: "fail", Package: "example.com/m/b", Test: "TestBad/sub"},
		event{Time: at(70), Action: "output", Package: "example.com/m/b", Test: "TestBad/fine", Output: "    --- PASS: TestBad/fine (0.00s)\n"},
		event{Time: at(70), Action: "pass", Package: "example.com/m/b", Test: "TestBad/fine"},
		event{Time: at(70), Action: "fail", Package: "example.com/m/b", Test: "TestBad"},
		event{Time: at(70), Action: "output", Package: "example.com/m/b", Output: "FAIL\n"},
		event{Time: at(70), Action: "output", Package: "example.com/m/b", Output: "FAIL\texample.com/m/b\t69.0s\n"},
		event{Time: at(70), Action: "fail", Package: "example.com/m/b", Elapsed: 69},
		event{Time: at(71), Action: "start", Package: "example.com/m/c"},
		event{Time: at(71), Action: "output", Package: "example.com/m/c", Output: "?   \texample.com/m/c\t[no test files]\n"},
		event{Time: at(71), Action: "skip", Package: "example.com/m/c"},
	)
	r.tick(at(125))
	r.summary(at(130), 1)
	want := `== 1m5s: no package done; running a 1m5s, b 1m4s (TestBad 1m4s)
ok  	example.com/m/a	70.0s
    b_test.go:9: got 1, want 2
--- FAIL: TestBad (69.00s)
    --- FAIL: TestBad/sub (1.00s)
FAIL
FAIL	example.com/m/b	69.0s
?   	example.com/m/c	[no test files]
== 2m5s: 3 packages done; building
== go test: 3 packages in 2m10s, 1 failed: example.com/m/b
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// A test that never ended (its binary panicked, or timed out) is printed
// with the package's own output after it.
func TestReportUnendedTest(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out, false, t0)
	feed(t, r,
		event{Time: at(0), Action: "start", Package: "m/p"},
		event{Time: at(0), Action: "run", Package: "m/p", Test: "TestFine"},
		event{Time: at(0), Action: "output", Package: "m/p", Test: "TestFine", Output: "--- PASS: TestFine (0.00s)\n"},
		event{Time: at(0), Action: "pass", Package: "m/p", Test: "TestFine"},
		event{Time: at(0), Action: "run", Package: "m/p", Test: "TestHang"},
		event{Time: at(0), Action: "output", Package: "m/p", Test: "TestHang", Output: "=== RUN   TestHang\n"},
		event{Time: at(9), Action: "output", Package: "m/p", Test: "TestHang", Output: "panic: test timed out after 9s\n"},
		event{Time: at(9), Action: "output", Package: "m/p", Test: "TestHang", Output: "\trunning tests:\n"},
		event{Time: at(9), Action: "output", Package: "m/p", Output: "FAIL\tm/p\t9.0s\n"},
		event{Time: at(9), Action: "fail", Package: "m/p", Elapsed: 9},
	)
	want := "panic: test timed out after 9s\n\trunning tests:\nFAIL\tm/p\t9.0s\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// Build errors are printed as they come, lines that are not events as
// they are, and -v prints every line of output as it comes.
func TestReportBuildErrorsAndVerbose(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out, true, t0)
	r.line(`{"ImportPath":"m/q [m/q.test]","Action":"build-output","Output":"# m/q [m/q.test]\n"}`)
	r.line(`{"ImportPath":"m/q [m/q.test]","Action":"build-output","Output":"q_test.go:3:2: undefined: x\n"}`)
	r.line(`{"ImportPath":"m/q [m/q.test]","Action":"build-fail"}`)
	r.line("go: some words of go test's own")
	feed(t, r,
		event{Time: at(1), Action: "start", Package: "m/q"},
		event{Time: at(1), Action: "output", Package: "m/q", Output: "FAIL\tm/q [build failed]\n"},
		event{Time: at(1), Action: "fail", Package: "m/q", FailedBuild: "m/q [m/q.test]"},
		event{Time: at(2), Action: "start", Package: "m/r"},
		event{Time: at(2), Action: "run", Package: "m/r", Test: "TestR"},
		event{Time: at(2), Action: "output", Package: "m/r", Test: "TestR", Output: "=== RUN   TestR\n"},
		event{Time: at(2), Action: "output", Package: "m/r", Test: "TestR", Output: "    r_test.go:5: a log\n"},
		event{Time: at(2), Action: "output", Package: "m/r", Test: "TestR", Output: "--- PASS: TestR (0.00s)\n"},
		event{Time: at(2), Action: "pass", Package: "m/r", Test: "TestR"},
		event{Time: at(2), Action: "output", Package: "m/r", Output: "ok  \tm/r\t0.1s\n"},
		event{Time: at(2), Action: "pass", Package: "m/r"},
	)
	r.summary(at(3), 1)
	want := `# m/q [m/q.test]
q_test.go:3:2: undefined: x
go: some words of go test's own
FAIL	m/q [build failed]
=== RUN   TestR
    r_test.go:5: a log
--- PASS: TestR (0.00s)
ok  	m/r	0.1s
== go test: 2 packages in 3s, 1 failed: m/q
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// run runs a real go test: the results as the packages end, a line of
// progress at least every period while a test runs, a failure in full but
// the passing tests' lines, and go test's exit status.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"a/a_test.go": `package a

import (
	"testing"
	"time"
)

func TestSlow(t *testing.T) {
	t.Log("a log of a passing test")
	time.Sleep(300 * time.Millisecond)
}
`,
		"b/b_test.go": `package b

import "testing"

func TestBad(t *testing.T) {
	t.Run("sub", func(t *testing.T) { t.Errorf("got %d, want %d", 1, 2) })
	t.Run("fine", func(t *testing.T) { t.Log("a log of a passing subtest") })
}
`,
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "")
	args := []string{"-count=1", "./..."}
	if raceEnabled { // the packages this test's binary was built with, from the build cache
		args = append([]string{"-race"}, args...)
	}
	var out, errOut bytes.Buffer
	code := run(args, 100*time.Millisecond, nil, &out, &errOut)
	got := out.String()
	if code != 1 {
		t.Errorf("exit status %d, want go test's 1\n%s%s", code, got, errOut.String())
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^== \S+: (no package|\d+ packages?) done; running a `), // a runs before or after b ends
		regexp.MustCompile(`(?m)^ok  \texample.com/m/a\t`),
		regexp.MustCompile(`(?m)^    b_test.go:6: got 1, want 2\n--- FAIL: TestBad/sub \(.*\n--- FAIL: TestBad \(`),
		regexp.MustCompile(`(?m)^FAIL\texample.com/m/b\t`),
		regexp.MustCompile(`(?m)^== go test: 2 packages in \S+, 1 failed: example.com/m/b\n\z`),
	} {
		if !want.MatchString(got) {
			t.Errorf("the output does not match %s:\n%s", want, got)
		}
	}
	for _, not := range []string{"a log of a passing", "=== RUN", "--- PASS"} {
		if strings.Contains(got, not) {
			t.Errorf("the output has %q:\n%s", not, got)
		}
	}
}
