// Command toolbench measures what toolsift does for a set of tools: how many
// prompt tokens their schemas cost, how well retrieval finds the right ones,
// and how fast. Run it without arguments for the usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/toolsift/toolsift/cmd/internal/cli"
	"github.com/toolsift/toolsift/internal/termsafe"
)

// command is one toolbench subcommand. run gets the arguments after the
// subcommand's name. A run that returns errUsage prints the usage and exits 2.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command may touch of the process, so tests can run commands
// in-process.
type env struct {
	stdout, stderr io.Writer
	// stdin answers run --approve's questions; nil denies every call.
	stdin io.Reader
	// stderrIsTerminal enables progress bars.
	stderrIsTerminal bool
	getenv           func(string) string

	// warned holds the warning lines printed so far (warn).
	warnMu sync.Mutex
	warned map[string]bool
	// statusReport: the command prints every server's Status warnings in
	// its report (list), so the log records that repeat one are dropped.
	statusReport bool
}

// warn prints a warning line on stderr once per command: a server's
// warning reaches it both from the Hub's log and from its Status.
func (e *env) warn(line string) {
	e.warnMu.Lock()
	defer e.warnMu.Unlock()
	if e.warned[line] {
		return
	}
	if e.warned == nil {
		e.warned = map[string]bool{}
	}
	e.warned[line] = true
	fmt.Fprintln(e.stderr, line)
}

var commands = map[string]command{}

// register adds a subcommand; each command's file calls it from init.
func register(c command) { commands[c.name] = c }

// errUsage means the arguments were wrong; the message has been printed.
var errUsage = errors.New("usage")

func main() {
	// SIGINT and SIGTERM cancel the command; it exits 128+signal, as a
	// shell reports a process the signal killed (130 for Ctrl-C).
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Value
	go func() {
		sig := <-sigs
		got.Store(sig)
		signal.Stop(sigs) // a second Ctrl-C kills at once
		cancel()
	}()
	e := &env{
		stdout:           os.Stdout,
		stdin:            os.Stdin,
		stderr:           os.Stderr,
		stderrIsTerminal: isTerminal(os.Stderr),
		getenv:           os.Getenv,
	}
	code := run(ctx, e, os.Args[1:])
	if sig, ok := got.Load().(os.Signal); ok {
		code = signalExit(sig)
	}
	os.Exit(code)
}

// signalExit is the exit code of a command that sig interrupted.
func signalExit(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// run dispatches args to a subcommand and returns the process exit code.
// Without a command, or with flags first (toolbench --json), the default
// command gets every argument.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			usage(e.stdout)
			return 0
		case "version", "-version", "--version":
			fmt.Fprintln(e.stdout, "toolbench", cli.Version())
			return 0
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if c, ok := commands[""]; ok {
			return exitCode(e, "", c.run(ctx, e, args))
		}
		usage(e.stdout)
		return 0
	}
	name := args[0]
	c, ok := commands[name]
	if !ok || name == "" {
		fmt.Fprintf(e.stderr, "toolbench: unknown command %q\n\n", name)
		usage(e.stderr)
		return 2
	}
	return exitCode(e, name, c.run(ctx, e, args[1:]))
}

func exitCode(e *env, name string, err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		prefix := "toolbench"
		if name != "" {
			prefix += " " + name
		}
		fmt.Fprintf(e.stderr, "%s: %s\n", prefix, termsafe.String(err.Error()))
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `toolbench measures how toolsift shrinks and sharpens the tool list an agent sends.

Usage:
  toolbench [eval flags]
  toolbench <command> [flags]
  toolbench --version

Commands:`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	if len(names) == 0 {
		fmt.Fprintln(w, "  (none yet)")
	}
	fmt.Fprintln(w, `
Without a command, toolbench evaluates the embedded BFCL catalog (2,574 tools,
2,351 queries) in every ranking mode: no network, no API key. eval's flags
apply (toolbench --json).
Run "toolbench <command> -h" for a command's flags.`)
}

// newFlags returns a FlagSet for a subcommand that reports errors instead of
// exiting, with its usage on e.stderr. The default command (name "") shows
// toolbench's usage.
func newFlags(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		if name == "" {
			usage(e.stderr)
			return
		}
		fmt.Fprintf(e.stderr, "Usage: toolbench %s %s\n\nFlags:\n", name, strings.TrimSpace(synopsis))
		fs.PrintDefaults()
	}
	return fs
}

// usageError prints why the arguments are wrong ("toolbench eval: --queries
// is required"), then the command's usage, and returns errUsage (exit 2).
func usageError(fs *flag.FlagSet, format string, a ...any) error {
	prog := "toolbench"
	if fs.Name() != "" {
		prog += " " + fs.Name()
	}
	fmt.Fprintf(fs.Output(), "%s: %s\n\n", prog, fmt.Sprintf(format, a...))
	fs.Usage()
	return errUsage
}

// parseFlags parses flags wherever they stand, before or after the
// positional arguments (run --config x "task" --max-steps 2); after "--"
// everything is positional. fs.Args() then holds the positional arguments.
// A bad flag is a usage error that says what was wrong (see cli.Parse);
// -h prints the usage and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := cli.Parse(fs, args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	}
	return usageError(fs, "%s", err)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
