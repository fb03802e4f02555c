package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/cmd/internal/cli"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
)

// connection is how a command connects to the servers of its config: the
// Hub's options and the values of the config's ${input:ID} variables.
type connection struct {
	hub    upstream.HubOptions
	inputs map[string]string
}

// openToolset is how every command that connects to servers (list, tokens,
// eval --config, run, trust) does it, as a library user would: the config
// loaded, a Hub made with c's options (the Toolset's Store, and its Logger
// unless c has one) and toolsift.OpenHub, with the config's warnings and
// each failed server's reason on stderr. While it connects, a terminal's
// stderr shows how far it is, unless quiet. It returns the Toolset and its
// Hub; the caller closes the Toolset, which closes the Hub.
func openToolset(ctx context.Context, e *env, path string, c connection, o toolsift.Options, quiet bool) (*toolsift.Toolset, *upstream.Hub, time.Duration, error) {
	start := time.Now()
	cfg, err := config.Load(path, &config.Options{Inputs: c.inputs})
	if err != nil {
		return nil, nil, time.Since(start), err
	}
	h := c.hub
	var line *connectProgress
	if e.stderrIsTerminal && !quiet {
		line = startConnectProgress(e.stderr)
		h.Progress = line.update
	}
	if o.Logger == nil {
		// The library's warnings (a cache entry or folder refused, a tool
		// changed since first seen) reach the user once, through the
		// commands' handler, not the library's stderr default as well.
		o.Logger = slog.New(warnHandler{e})
	}
	if h.Logger == nil {
		h.Logger = o.Logger
	}
	if h.Store == nil {
		h.Store = o.Store // nil: the Hub's default folder, the Toolset's too
	}
	if h.Auth == nil {
		// Servers that need a login get the stored tokens, or fail at once
		// naming toolbench login.
		if s := authStore(e, path); s != nil {
			h.Auth = s
		}
	}
	hub, err := upstream.NewHub(cfg, &h)
	if err != nil {
		return nil, nil, time.Since(start), err
	}
	ts, err := toolsift.OpenHub(ctx, hub, &o)
	elapsed := time.Since(start)
	if line != nil {
		line.stop()
	}
	if err != nil {
		return nil, nil, elapsed, err
	}
	for _, w := range ts.Warnings() {
		e.warn("warning: " + termsafe.String(w))
	}
	return ts, hub, elapsed, nil
}

// connectFlag adds --connect (and its other name, --eager): start every
// server rather than serve from the cache those whose tool list it holds.
func connectFlag(fs *flag.FlagSet) *bool {
	connect := fs.Bool("connect", false, "start every server, even those whose tool list is in the cache (the default serves those from the cache)")
	fs.BoolVar(connect, "eager", false, "the same as --connect")
	return connect
}

// startMode is the Hub's start mode for --connect.
func startMode(connect bool) upstream.StartMode {
	if connect {
		return upstream.StartEager
	}
	return upstream.StartLazy
}

// cacheNote says which servers' tools came from the cache and how old the
// oldest list is ("3 servers from cache, 3 h old (--connect starts them);
// 1 started: no cache entry"); "" when every server was started.
func cacheNote(statuses []upstream.ServerStatus, now time.Time) string {
	cached, started := 0, 0
	var oldest time.Time
	for _, st := range statuses {
		switch {
		case st.State == upstream.StateLazy || st.FromCache:
			cached++
			if !st.CachedAt.IsZero() && (oldest.IsZero() || st.CachedAt.Before(oldest)) {
				oldest = st.CachedAt
			}
		case st.State == upstream.StateReady:
			started++
		}
	}
	if cached == 0 {
		return ""
	}
	note := fmt.Sprintf("tools of %s from cache", runPlural(cached, "server"))
	if !oldest.IsZero() {
		note += ", " + age(now.Sub(oldest)) + " old"
	}
	note += " (--connect starts them)"
	if started > 0 {
		note += fmt.Sprintf("; %s started: no cache entry", runPlural(started, "server"))
	}
	return note
}

// age is d for people: "40 s", "12 min", "3 h", "2 days".
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
}

// quietFlag adds --quiet, which turns the progress line off.
// packFlag is --pack: how many ranked tools beyond K also compete for the
// budget (think.Options.Pack); 0 turns packing off.
func packFlag(fs *flag.FlagSet) *int {
	return fs.Int("pack", think.DefaultPack, "ranked tools beyond --k that also compete for the budget, at cheaper tiers if need be (`N`; 0: none, only the K best)")
}

// listingFlags are --listing and --no-listing (the default): whether a
// step that offers search_tools lists the tools its schemas leave out by
// name (think.Options.Listing); apply puts them into a step's options.
func listingFlags(fs *flag.FlagSet) (apply func(*think.Options)) {
	on := fs.Bool("listing", false, "at a step that offers search_tools, list the tools the schemas leave out by name and one line (their parameters a search_tools step away), in up to half the budget, giving up the lowest-scored schemas (off by default)")
	off := fs.Bool("no-listing", false, "no listings: every tool a step sends has its schema (the default; overrides --listing)")
	return func(o *think.Options) { o.Listing = *on && !*off }
}

// setPack puts --pack into o.
func setPack(o *think.Options, pack int) {
	o.Pack, o.NoPack = pack, pack == 0
}

func quietFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("quiet", false, "no progress line on stderr while servers connect")
}

// cacheFlags adds --store, --no-cache and the deprecated --cache-dir to
// fs; apply opens the store they name (cli.OpenStore) into a Toolset's
// options: nil (the default folder) when none is set.
func cacheFlags(fs *flag.FlagSet) (apply func(context.Context, *toolsift.Options) error) {
	spec := fs.String("store", "", "where tool lists, trust records, vectors and token costs are kept: a `folder` (default the user cache folder's toolsift), or a postgres:// URL")
	old := fs.String("cache-dir", "", "deprecated: --store")
	off := fs.Bool("no-cache", false, "keep nothing past this run: every server starts now")
	return func(ctx context.Context, o *toolsift.Options) error {
		dir := *spec
		switch {
		case *old != "" && dir != "" && *old != dir:
			return usageError(fs, "--cache-dir %s and --store %s: give --store only", *old, dir)
		case *old != "":
			dir = *old
		}
		switch {
		case *off && dir != "":
			return usageError(fs, "--no-cache and --store %s: give one", dir)
		case *off:
			o.Store = store.NewMemory()
		case dir != "":
			st, err := cli.OpenStore(ctx, dir, nil)
			if errors.Is(err, postgres.ErrUnavailable) {
				return err // the flag is right; the database is not there
			}
			if err != nil {
				return usageError(fs, "%v", err)
			}
			o.Store = st
		}
		return nil
	}
}

// warnFailed prints one line per server that is not ready (a lazy server,
// served from the cache until it is called, is fine).
// It also prints every server's warnings (tools dropped or changed since
// first seen), as list does: every command that connects shows them.
func warnFailed(e *env, statuses []upstream.ServerStatus, what string) {
	for _, st := range statuses {
		if st.State != upstream.StateReady && st.State != upstream.StateDisabled && st.State != upstream.StateLazy {
			e.warn(fmt.Sprintf("warning: server %s is %s: %s%s", st.Name, st.State, termsafe.String(fmt.Sprint(st.Err)), what))
		}
		for _, w := range st.Warnings {
			e.warn(serverWarning(st.Name, w))
		}
	}
}

// inputFlag adds a repeatable --input ID=VALUE for a config's ${input:ID}
// variables (VS Code's "inputs"); the values are secrets and never printed.
func inputFlag(fs *flag.FlagSet) map[string]string {
	inputs := map[string]string{}
	fs.Func("input", "value of a config's ${input:`ID`}, as ID=VALUE (repeatable)", func(s string) error {
		id, value, ok := strings.Cut(s, "=")
		switch {
		case !ok:
			return fmt.Errorf("want ID=VALUE, got %q without =", s)
		case id == "":
			return errors.New("want ID=VALUE, got no ID before =") // the value is a secret
		}
		inputs[id] = value
		return nil
	})
	return inputs
}

// serverWarning is the line of one of a server's warnings.
func serverWarning(server, w string) string {
	return termsafe.String(fmt.Sprintf("warning: server %s: %s", server, w))
}

// warnHandler prints the library's warnings through env.warn as "warning:
// message: value ...", one line each, and drops the rest. A record that
// carries a server's Status warning (attributes "server" and "warning")
// prints as warnFailed prints it, so that it is printed once.
type warnHandler struct{ e *env }

func (h warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h warnHandler) Handle(_ context.Context, r slog.Record) error {
	line := "warning: " + r.Message
	var server, warning string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "server":
			server = a.Value.String()
		case "warning":
			warning = a.Value.String()
			return true
		}
		line += ": " + a.Value.String()
		return true
	})
	if server != "" && warning != "" {
		if !h.e.statusReport {
			h.e.warn(serverWarning(server, warning))
		}
		return nil
	}
	h.e.warn(termsafe.String(line))
	return nil
}

func (h warnHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnHandler) WithGroup(string) slog.Handler      { return h }
