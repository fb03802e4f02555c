// Package cli holds what the two commands (toolbench and toolsift) share
// in reading their command lines: flags anywhere among the arguments, and
// flag errors worded for a person.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Parse parses args into fs with the flags wherever they stand, before or
// after the positional arguments (run --config x "task" --max-steps 2);
// after "--" everything is positional, and fs.Args() then holds the
// positional arguments. It prints nothing (the flag package's own message
// and usage are silenced): -h gives flag.ErrHelp, and a bad flag an error
// worded for a person that names the flag and what it wants ("unknown
// flag --foo", `--k: "x" is not a whole number`, "--config needs a
// value"). The command prints its usage.
func Parse(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	// Each value is wrapped while parsing, so that a value's error names
	// the flag and what it wants without reading the flag package's text.
	var failed badValue
	var restore []func()
	fs.VisitAll(func(f *flag.Flag) {
		v := f.Value
		f.Value = &checkedValue{Value: v, name: f.Name, failed: &failed}
		restore = append(restore, func() { f.Value = v })
	})
	defer func() {
		for _, r := range restore {
			r()
		}
		fs.Usage = usage
		fs.SetOutput(out)
	}()
	parse := func(args []string) error {
		err := fs.Parse(args)
		if err == nil || errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errors.New(flagProblem(err, failed))
	}
	var pos []string
	for {
		if err := parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return parse(append([]string{"--"}, pos...))
}

// badValue is a flag value that Set refused.
type badValue struct {
	name, value string
	v           flag.Value
	err         error
}

// checkedValue records the value its flag.Value refuses.
type checkedValue struct {
	flag.Value
	name   string
	failed *badValue
}

func (c *checkedValue) Set(s string) error {
	err := c.Value.Set(s)
	if err != nil {
		*c.failed = badValue{name: c.name, value: s, v: c.Value, err: err}
	}
	return err
}

// IsBoolFlag keeps boolean flags usable without a value.
func (c *checkedValue) IsBoolFlag() bool {
	b, ok := c.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagProblem words a flag error for a person: "unknown flag --foo",
// `--k: "x" is not a whole number`.
func flagProblem(err error, bad badValue) string {
	if bad.name != "" {
		if g, ok := bad.v.(flag.Getter); ok {
			want := ""
			switch g.Get().(type) {
			case int, int64, uint, uint64:
				want = "is not a whole number"
			case float64:
				want = "is not a number"
			case bool:
				want = "is not true or false"
			case time.Duration:
				want = "is not a duration (such as 30s, 2m or 1h30m)"
			}
			if want != "" {
				return fmt.Sprintf("--%s: %q %s", bad.name, bad.value, want)
			}
		}
		// A function's flag says what it shows of the value (--input's
		// values are secrets).
		return fmt.Sprintf("--%s: %v", bad.name, bad.err)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + name
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + name + " needs a value"
	}
	return msg
}
