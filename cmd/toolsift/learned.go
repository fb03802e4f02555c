package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/internal/usagekey"
	"github.com/toolsift/toolsift/store"
	learn "github.com/toolsift/toolsift/usage"
)

const learnedSynopsis = `toolsift usage list|export|forget [--scope TEAM] [--user USER] [--tool TOOL] [--before DURATION|TIME] [--store FOLDER|URL]

What serve's search learned from the calls it routed (its usage memory, kept in
the store under usage/): a search_tools query followed by the same caller's
successful call of a tool it returned. Each call is kept per scope (the caller's
first team; "" for callers with no team and anonymous ones; with serve's
--learn-scope user, user:NAME; global, "") for its user, as the
query's sentence vector and hashed words (never its text, unless kept), with how
many times and when.

  list    a table: scope, user, tool, count, first and last call
  export  the same calls as JSON lines
  forget  deletes the calls that match the filters (at least one is required;
          --all for every call), and says how many. A serve on the same store
          stops ranking with them when it next reads the scope: at once over
          PostgreSQL, at its next write over a folder.`

// learnedCommand runs toolsift usage (the name usage is the help text's).
func learnedCommand(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "export" && args[0] != "forget") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprintf(e.stdout, "Usage: %s\n", learnedSynopsis)
			return nil
		}
		fmt.Fprintf(e.stderr, "Usage: %s\n", learnedSynopsis)
		return errUsage
	}
	verb := args[0]
	fs := newFlagSet(e, "usage "+verb, learnedSynopsis)
	scope := fs.String("scope", "", "only this `team`'s calls (the scope \"\" is callers with no team: --scope ''; default every scope)")
	user := fs.String("user", "", "only this `user`'s calls")
	toolName := fs.String("tool", "", "only the calls of this `tool` (server__tool)")
	before := fs.String("before", "", "only calls last made this long ago (`720h`) or before this time (2026-11-01, 2026-11-01T12:00:00Z)")
	all := false
	if verb == "forget" {
		fs.BoolVar(&all, "all", false, "forget every call of the scopes chosen (no other filter needed)")
	}
	folder := storeFlag(fs)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	scopeSet := false
	fs.Visit(func(f *flag.Flag) { scopeSet = scopeSet || f.Name == "scope" })
	var cut time.Time
	if *before != "" {
		var err error
		if cut, err = parseSince(*before, time.Now()); err != nil {
			return usageError(fs, "--before %q: %v", *before, err)
		}
	}
	if verb == "forget" && !all && !scopeSet && *user == "" && *toolName == "" && *before == "" {
		return usageError(fs, "forget needs a filter (--scope, --user, --tool, --before) or --all")
	}
	match := func(en learn.Entry) bool {
		return (*user == "" || en.Identity == *user) && (*toolName == "" || en.Tool == *toolName) && (cut.IsZero() || en.Last.Before(cut))
	}
	st, where, err := openStoreFlag(ctx, *folder)
	if err != nil {
		return err
	}
	defer st.Close()
	keys := []string{usagekey.Key(*scope)}
	if !scopeSet {
		if keys, err = st.List(ctx, usagekey.Prefix); err != nil {
			return err
		}
	}
	switch verb {
	case "forget":
		n := 0
		for _, key := range keys {
			k, err := forgetIn(ctx, st, key, match)
			n += k
			if err != nil {
				return err
			}
		}
		fmt.Fprintf(e.stdout, "Forgot %d calls in %s.\n", n, where)
		return nil
	default:
		var w *tabwriter.Writer
		enc := json.NewEncoder(e.stdout)
		n := 0
		for _, key := range keys {
			name, mem, err := readScope(ctx, st, key)
			if err != nil {
				return err
			}
			for en := range mem.Entries(name) {
				if !match(en) {
					continue
				}
				n++
				if verb == "export" {
					if err := enc.Encode(entryJSON{Scope: name, User: en.Identity, Tool: en.Tool, Hash: en.Hash, Count: en.Count, First: en.First, Last: en.Last, Text: en.Text}); err != nil {
						return err
					}
					continue
				}
				if w == nil {
					w = tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
					fmt.Fprintln(w, "SCOPE\tUSER\tTOOL\tCOUNT\tFIRST\tLAST")
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", orDash(name), orDash(en.Identity), termsafe.String(en.Tool), en.Count,
					en.First.Local().Format(time.DateTime), en.Last.Local().Format(time.DateTime))
			}
		}
		if w != nil {
			return w.Flush()
		}
		if n == 0 && verb == "list" {
			fmt.Fprintf(e.stderr, "No learned calls in %s match.\n", where)
		}
		return nil
	}
}

// entryJSON is one call as export writes it.
type entryJSON struct {
	Scope string    `json:"scope"`
	User  string    `json:"user"`
	Tool  string    `json:"tool"`
	Hash  string    `json:"hash"`
	Count int       `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	Text  string    `json:"text,omitempty"`
}

// learnedMemory is a memory that holds whatever a scope's value holds:
// its texts, and no bound below what a store value can hold.
func learnedMemory() *learn.Memory {
	m, err := learn.New(&learn.Options{KeepText: true, MaxCalls: math.MaxInt32, MaxBytes: store.MaxValueBytes})
	if err != nil {
		panic(err) // the options are valid
	}
	return m
}

// readScope reads the scope kept under key; a key that holds nothing is an
// empty scope, one that is not a usage scope an error naming it.
func readScope(ctx context.Context, st store.Store, key string) (string, *learn.Memory, error) {
	name, ok := usagekey.Scope(key)
	if !ok {
		return "", nil, fmt.Errorf("%s: not a key of the usage memory", key)
	}
	mem := learnedMemory()
	data, err := st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return name, mem, nil
	}
	if err != nil {
		return "", nil, err
	}
	if err := mem.Merge(name, data); err != nil {
		return "", nil, fmt.Errorf("%s: %w", key, err)
	}
	return name, mem, nil
}

// forgetIn forgets the calls match accepts in the scope kept under key,
// under the key's store lock (a serve writing the scope waits for it), and
// returns how many it forgot.
func forgetIn(ctx context.Context, st store.Store, key string, match func(learn.Entry) bool) (int, error) {
	unlock, err := st.Lock(ctx, key)
	if err != nil {
		return 0, err
	}
	defer unlock()
	name, mem, err := readScope(ctx, st, key)
	if err != nil {
		return 0, err
	}
	n := mem.Forget(name, match)
	if n == 0 {
		return 0, nil
	}
	if mem.Calls(name) == 0 {
		return n, st.Delete(ctx, key)
	}
	return n, st.Put(ctx, key, mem.Marshal(name))
}
