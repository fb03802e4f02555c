// Command testprogress runs go test and prints what it is doing as it goes:
// each package's result as soon as that package ends (not in the order of
// the command line), a failed package's output in full, build errors as
// they happen, and, at least every minute, the packages whose tests are
// running, each with the test that has run longest.
//
//	go run ./cmd/internal/testprogress [go test flags] [packages]
//
// It runs `go test -json` with the arguments given and exits with go
// test's exit status. With -v it prints every line of output as it comes.
// It is the formatter of .ci/test.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	// An interrupt reaches go test too (the same process group): wait for
	// it to end, reporting what it prints meanwhile, and exit as it does.
	// A termination asked of this process alone is passed on.
	signal.Ignore(os.Interrupt)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	os.Exit(run(os.Args[1:], time.Minute, term, os.Stdout, os.Stderr))
}

// run runs go test -json with args, reports to out (a line at least every
// period), passes the signals it receives from signals on to go test, and
// returns go test's exit status.
func run(args []string, every time.Duration, signals <-chan os.Signal, out, errOut io.Writer) int {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(errOut, "testprogress:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(errOut, "testprogress:", err)
		return 1
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case s := <-signals:
				cmd.Process.Signal(s)
			case <-stop:
				return
			}
		}
	}()

	r := newReport(out, slices.Contains(args, "-v") || slices.Contains(args, "-v=true"), time.Now())
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintln(errOut, "testprogress: reading go test's output:", err)
			io.Copy(io.Discard, stdout) // let go test finish
		}
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case line, ok := <-lines:
			if !ok {
				done = true
				break
			}
			r.line(line)
		case now := <-tick.C:
			r.tick(now)
		}
	}
	err = cmd.Wait()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(errOut, "testprogress:", err)
			return 1
		}
		code = exit.ExitCode()
		if code < 0 { // killed by a signal
			code = 1
		}
	}
	r.summary(time.Now(), code)
	return code
}

// event is one line of go test -json (cmd/test2json's TestEvent, and go
// build's BuildEvent for build output).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
	ImportPath  string // build-output and build-fail
}

// pkg is what the report keeps of a package until it ends.
type pkg struct {
	start   time.Time            // when its test binary started; zero until then
	output  []event              // its output events, in order
	running map[string]time.Time // top-level tests running, by name: when each started
	result  map[string]string    // tests' last action: pass, fail, skip
}

// report turns go test's events into lines for a person.
type report struct {
	out     io.Writer
	verbose bool
	module  string // the module path of the current folder's go.mod, left out of the progress lines
	begin   time.Time
	pkgs    map[string]*pkg
	done    int      // packages ended
	failed  []string // packages that failed, in the order they ended
}

func newReport(out io.Writer, verbose bool, begin time.Time) *report {
	return &report{out: out, verbose: verbose, module: modulePath("go.mod"), begin: begin, pkgs: map[string]*pkg{}}
}

// modulePath returns the module path a go.mod file declares, "" when
// there is none.
func modulePath(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

func (r *report) pkg(name string) *pkg {
	p := r.pkgs[name]
	if p == nil {
		p = &pkg{running: map[string]time.Time{}, result: map[string]string{}}
		r.pkgs[name] = p
	}
	return p
}

// line handles one line of go test's standard output.
func (r *report) line(text string) {
	var e event
	if !strings.HasPrefix(text, "{") || json.Unmarshal([]byte(text), &e) != nil {
		fmt.Fprintln(r.out, text) // not an event: go test's own words
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
		return
	case "build-fail":
		return // the package's fail event follows
	}
	if e.Package == "" {
		fmt.Fprint(r.out, e.Output)
		return
	}
	p := r.pkg(e.Package)
	if r.verbose && e.Action == "output" {
		fmt.Fprint(r.out, e.Output)
	}
	switch {
	case e.Action == "start":
		p.start = e.Time
	case e.Action == "output":
		p.output = append(p.output, e)
	case e.Test == "":
		if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
			r.end(e.Package, p, e)
		}
	case e.Action == "run" && !strings.Contains(e.Test, "/"):
		p.running[e.Test] = e.Time
	case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
		p.result[e.Test] = e.Action
		delete(p.running, e.Test)
	}
}

// end prints a package's result: go test's summary line, and for a
// failure everything but the lines of the tests that passed.
func (r *report) end(name string, p *pkg, e event) {
	r.done++
	delete(r.pkgs, name)
	if e.Action == "fail" {
		r.failed = append(r.failed, name)
	}
	if r.verbose {
		return // every line was printed as it came
	}
	if e.Action == "fail" {
		fmt.Fprint(r.out, failure(p))
		return
	}
	for _, o := range p.output {
		if o.Test == "" && !framing(o.Output) && (strings.HasPrefix(o.Output, "ok ") || strings.HasPrefix(o.Output, "?")) {
			fmt.Fprint(r.out, o.Output)
		}
	}
}

// failure is what go test prints for a failed package: its output but
// that of the tests that passed or were skipped and the lines that frame
// each test's output in -json mode (=== RUN, PAUSE, CONT, NAME), each
// top-level test's lines together (in the order of their first line),
// then the package's own.
func failure(p *pkg) string {
	var order []string              // top-level tests, by first output
	byTest := map[string][]string{} // top-level test → its lines and its subtests'
	var own []string
	for _, o := range p.output {
		if framing(o.Output) {
			continue
		}
		if o.Test == "" {
			own = append(own, o.Output)
			continue
		}
		if res := p.result[o.Test]; res == "pass" || res == "skip" {
			continue
		}
		top, _, _ := strings.Cut(o.Test, "/")
		if _, ok := byTest[top]; !ok {
			order = append(order, top)
		}
		byTest[top] = append(byTest[top], o.Output)
	}
	var b strings.Builder
	for _, t := range order {
		for _, s := range byTest[t] {
			b.WriteString(s)
		}
	}
	for _, s := range own {
		b.WriteString(s)
	}
	return b.String()
}

// framing reports whether an output line is one -json mode adds around a
// test's output.
func framing(s string) bool {
	for _, f := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(s, f) {
			return true
		}
	}
	return false
}

// tick prints what is running: the packages whose test binaries run, the
// longest first, each with how long it has run and its longest-running
// test.
func (r *report) tick(now time.Time) {
	var running []string
	names := make([]string, 0, len(r.pkgs))
	for name, p := range r.pkgs {
		if !p.start.IsZero() {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return r.pkgs[a].start.Compare(r.pkgs[b].start) })
	for _, name := range names {
		p := r.pkgs[name]
		short := name
		if r.module != "" {
			short = strings.TrimPrefix(name, r.module+"/")
		}
		s := fmt.Sprintf("%s %s", short, round(now.Sub(p.start)))
		test, since := "", now
		for t, at := range p.running {
			if at.Before(since) || at.Equal(since) && t < test {
				test, since = t, at
			}
		}
		if test != "" {
			s += fmt.Sprintf(" (%s %s)", test, round(now.Sub(since)))
		}
		running = append(running, s)
	}
	what := "building"
	if len(running) > 0 {
		what = "running " + strings.Join(running, ", ")
	}
	fmt.Fprintf(r.out, "== %s: %s done; %s\n", round(now.Sub(r.begin)), packages(r.done), what)
}

// summary prints the last line: how many packages ended, which failed,
// and how long it all took.
func (r *report) summary(now time.Time, code int) {
	s := fmt.Sprintf("== go test: %s in %s", packages(r.done), round(now.Sub(r.begin)))
	switch {
	case len(r.failed) > 0:
		s += fmt.Sprintf(", %d failed: %s", len(r.failed), strings.Join(r.failed, " "))
	case code != 0:
		s += fmt.Sprintf(", exit status %d", code)
	default:
		s += ", all ok"
	}
	fmt.Fprintln(r.out, s)
}

// packages is n packages in words.
func packages(n int) string {
	switch n {
	case 0:
		return "no package"
	case 1:
		return "1 package"
	}
	return fmt.Sprintf("%d packages", n)
}

// round is d to the second, or to the tenth of a second under a second.
func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
