package cli

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"testing"
	"time"
)

func flags() (*flag.FlagSet, *bytes.Buffer) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.String("config", "", "")
	fs.Int("k", 5, "")
	fs.Float64("budget", 0, "")
	fs.Bool("json", false, "")
	fs.Duration("timeout", time.Second, "")
	fs.Func("input", "", func(string) error { return errors.New("wants NAME=VALUE") })
	return fs, &out
}

func TestParseInterspersed(t *testing.T) {
	fs, out := flags()
	err := Parse(fs, []string{"--config", "c.json", "the task", "--k", "3", "--json", "more", "--", "--k", "-x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fs.Args(), []string{"the task", "more", "--k", "-x"}; !slices.Equal(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
	if k := fs.Lookup("k").Value.String(); k != "3" {
		t.Errorf("k = %s, want 3", k)
	}
	if fs.Lookup("json").Value.String() != "true" {
		t.Error("--json after a positional argument was not parsed")
	}
	if out.Len() != 0 {
		t.Errorf("Parse printed %q", out)
	}
	// The values are unwrapped again: a later Set reaches the flag itself.
	if _, ok := fs.Lookup("k").Value.(*checkedValue); ok {
		t.Error("flag values left wrapped after Parse")
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--foo"}, "unknown flag --foo"},
		{[]string{"task", "--config"}, "--config needs a value"},
		{[]string{"--k", "x"}, `--k: "x" is not a whole number`},
		{[]string{"--budget", "lots"}, `--budget: "lots" is not a number`},
		{[]string{"--json=maybe"}, `--json: "maybe" is not true or false`},
		{[]string{"--timeout", "5"}, `--timeout: "5" is not a duration (such as 30s, 2m or 1h30m)`},
		{[]string{"--input", "secret"}, "--input: wants NAME=VALUE"},
	} {
		fs, out := flags()
		err := Parse(fs, c.args)
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%q) = %v, want %q", c.args, err, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("Parse(%q) printed %q", c.args, out)
		}
	}
	fs, out := flags()
	if err := Parse(fs, []string{"task", "-h"}); !errors.Is(err, flag.ErrHelp) || out.Len() != 0 {
		t.Errorf("Parse(-h) = %v, printed %q; want flag.ErrHelp and nothing printed", err, out)
	}
}
