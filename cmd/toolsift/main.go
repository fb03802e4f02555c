// Command toolsift is one MCP server standing in for many: "toolsift serve
// --config FILE" serves every server of FILE to Claude Desktop, Claude Code,
// Cursor, VS Code, Codex or any MCP client, as a handful of tools:
// search_tools finds the tools a task needs (fitted to a token budget), the
// tools found join the client's list, call_tool calls any of them. Run it
// without arguments for the usage; the README has each client's snippet.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/toolsift/toolsift/cmd/internal/cli"
)

// env is what a command may touch of the process, so that tests run it
// in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// listening, when set, is told the HTTP address once serve listens.
	listening func(addr string)
}

// errUsage means the arguments were wrong; the message has been printed.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(run(ctx, e, os.Args[1:]))
}

// run dispatches args to a subcommand and returns the exit code: 0, 1 for a
// failure, 2 for wrong arguments.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(e.stdout)
		return 0
	case "version", "-version", "--version":
		fmt.Fprintln(e.stdout, "toolsift", cli.Version())
		return 0
	case "serve":
		err = serve(ctx, e, args[1:])
	case "token":
		err = token(ctx, e, args[1:])
	case "audit":
		err = auditCommand(ctx, e, args[1:])
	case "usage":
		err = learnedCommand(ctx, e, args[1:])
	default:
		fmt.Fprintf(e.stderr, "toolsift: unknown command %q\n\n", args[0])
		usage(e.stderr)
		return 2
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(e.stderr, "toolsift %s: %v\n", args[0], err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `toolsift serves many MCP servers as one, with the right tools for each task.

Usage:
  toolsift serve --config FILE [flags]   MCP server over stdio (or --listen ADDR for HTTP)
  toolsift token create|list|revoke      per-user API tokens for serve --listen --tokens
  toolsift audit [flags]                 the tool calls serve --audit recorded
  toolsift audit prune --before 720h     deletes the audit log's days older than that
  toolsift usage list|export|forget      what serve's search learned from the calls it routed
  toolsift --version                     the version (its serverInfo's too)

Run "toolsift serve -h" (token -h, audit -h, usage -h) for the flags.`)
}

// usageError prints why the arguments are wrong and where the usage is,
// and returns errUsage (exit 2).
func usageError(fs *flag.FlagSet, format string, a ...any) error {
	fmt.Fprintf(fs.Output(), "toolsift %s: %s\nRun \"toolsift %s -h\" for the flags.\n", fs.Name(), fmt.Sprintf(format, a...), fs.Name())
	return errUsage
}

// newFlagSet is a command's flag set: errors and usage to stderr, the
// usage its synopsis and then its flags.
func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// listFlag defines a repeatable flag whose values may also be given
// comma-separated; blanks are dropped. The values are appended to *dst.
func listFlag(fs *flag.FlagSet, dst *[]string, name, usage string) {
	fs.Func(name, usage, func(s string) error {
		for v := range strings.SplitSeq(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				*dst = append(*dst, v)
			}
		}
		return nil
	})
}

// parseFlags parses flags wherever they stand among the arguments
// (cli.Parse); a bad flag is a usage error that says what was wrong, -h
// prints the usage and returns flag.ErrHelp.
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
