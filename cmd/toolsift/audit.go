package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/store"
)

const auditSynopsis = `toolsift audit [--since DURATION|TIME] [--user USER] [--server SERVER] [--json] [--store FOLDER|URL]
       toolsift audit prune --before DURATION|DATE [--store FOLDER|URL]

Prints the audit log that toolsift serve --audit writes: one record per tool call
(who, which tool of which server, when, how long, the outcome; never arguments or
results), oldest first, as a table or JSON lines. "toolsift audit prune -h" tells
how to delete old days of it.

Outcomes (docs/serve.md, "Audit"):
  ok                 the upstream answered with a result
  tool-error         it answered with an error result (isError, or a JSON-RPC error)
  invalid-arguments  the arguments are not a JSON object; the upstream not asked
  unknown            no server lists the tool
  out-of-scope       the caller's --policy hides the tool (answered as unknown)
  disabled           the server's config filters the tool out (answered as unknown)
  quarantined        the tool changed since first seen: refused (toolbench trust)
  login-needed       a per-user server without the caller's own login
  unavailable        the tool's server is down, failed or could not be started
  cancelled          the client cancelled the call; the upstream was told
  revoked            the caller's token was revoked (or JWT expired) mid-call:
                     the gateway ended it and told the upstream
  error              any other failure (the server's timeout, the transport, ...)`

const auditPruneSynopsis = `toolsift audit prune --before DURATION|DATE [--store FOLDER|URL]

Deletes the audit records of every whole day (UTC) over by the cut, and prints
each day deleted with its count of records. --before 720h keeps the last 30 days
(the day the cut falls in is kept whole); --before 2026-11-01 deletes October and
earlier. The cut must be at least a day ago: the last day's records are still
being written. toolsift serve --audit-retention DURATION does this at start and
daily.`

// auditCommand runs toolsift audit (audit is the package it reads).
func auditCommand(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] == "prune" {
		return auditPrune(ctx, e, args[1:])
	}
	fs := newFlagSet(e, "audit", auditSynopsis)
	since := fs.String("since", "", "only records from this long ago (`24h`, 90m) or this time on (2026-11-26, 2026-11-26T10:00:00Z; a date is midnight UTC)")
	user := fs.String("user", "", "only this `user`'s calls")
	server := fs.String("server", "", "only calls of this `server`'s tools")
	asJSON := fs.Bool("json", false, "one JSON object per line instead of a table")
	folder := storeFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	var from time.Time
	if *since != "" {
		var err error
		if from, err = parseSince(*since, time.Now()); err != nil {
			return usageError(fs, "--since %q: %v", *since, err)
		}
	}
	st, where, err := openStoreFlag(ctx, *folder)
	if err != nil {
		return err
	}
	defer st.Close()
	var w *tabwriter.Writer
	enc := json.NewEncoder(e.stdout)
	n := 0
	for rec, err := range audit.Records(ctx, st, from) {
		if err != nil {
			return err
		}
		if *user != "" && rec.User != *user || *server != "" && rec.Server != *server {
			continue
		}
		n++
		if *asJSON {
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		if w == nil {
			w = tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
			fmt.Fprintln(w, "TIME\tUSER\tTEAMS\tSERVER\tTOOL\tDURATION\tOUTCOME\tSESSION")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", rec.Time.Local().Format("2006-01-02 15:04:05.000"),
			orDash(rec.User), orDash(strings.Join(rec.Teams, ",")), orDash(rec.Server),
			termsafe.String(rec.Tool), rec.Duration.Round(time.Microsecond), termsafe.String(rec.Outcome), orDash(rec.Session))
	}
	if w != nil {
		return w.Flush()
	}
	if n == 0 && !*asJSON {
		fmt.Fprintf(e.stderr, "No audit records in %s match.\n", where)
	}
	return nil
}

// orDash is s made safe for a terminal, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return termsafe.String(s)
}

// parseSince reads --since: a duration before now, an RFC 3339 time, or a
// date (midnight UTC).
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("want a positive duration")
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("want a duration (24h, 90m) or a time (2026-11-26, 2026-11-26T10:00:00Z)")
}

// auditPrune runs toolsift audit prune.
func auditPrune(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "audit prune", auditPruneSynopsis)
	before := fs.String("before", "", "delete the days over by this long ago (`720h`: keep 30 days; at least 24h) or by this time (2026-11-01, midnight UTC, or 2026-11-01T12:00:00Z)")
	folder := storeFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *before == "" {
		return usageError(fs, "--before is required: how old a day must be to go (720h, 2026-11-01)")
	}
	now := time.Now()
	cut, err := parseBefore(*before, now)
	if err != nil {
		return usageError(fs, "--before %q: %v", *before, err)
	}
	st, where, err := openStoreFlag(ctx, *folder)
	if err != nil {
		return err
	}
	defer st.Close()
	days, err := audit.Prune(ctx, st, cut)
	n := 0
	for _, d := range days {
		fmt.Fprintf(e.stdout, "%s\t%d records deleted\n", d.Day, d.Records)
		n += d.Records
	}
	if err != nil {
		return err
	}
	if len(days) == 0 {
		fmt.Fprintf(e.stdout, "No audit records of days over by %s in %s.\n", cut.UTC().Format(time.RFC3339), where)
		return nil
	}
	fmt.Fprintf(e.stdout, "Deleted %d audit records of %d days (%s to %s) from %s.\n", n, len(days), days[0].Day, days[len(days)-1].Day, where)
	return nil
}

// parseBefore reads prune's --before: a duration before now, an RFC 3339
// time or a date (midnight UTC), at least audit.MinRetention
// before now.
func parseBefore(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < audit.MinRetention {
			return time.Time{}, fmt.Errorf("under one day: want %v or more (the last day's records are still being written)", audit.MinRetention)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if t, err = time.Parse(time.DateOnly, s); err != nil {
			return time.Time{}, fmt.Errorf("want a duration (720h) or a date or time (2026-11-01, 2026-11-01T12:00:00Z)")
		}
	}
	switch ago := now.Sub(t); {
	case ago < 0:
		return time.Time{}, fmt.Errorf("in the future: want a day at least %v ago", audit.MinRetention)
	case ago < audit.MinRetention:
		return time.Time{}, fmt.Errorf("under one day ago: want one at least %v ago, such as %s (the last day's records are still being written)",
			audit.MinRetention, now.UTC().Add(-audit.MinRetention).Format(time.DateOnly))
	}
	return t, nil
}

// auditPruneEvery is how often serve --audit-retention prunes after its
// first prune, at start.
var auditPruneEvery = 24 * time.Hour

// startAuditPrune prunes the audit log in st of the days over by
// retention ago, at once and then every auditPruneEvery, logging what it
// deleted, until ctx ends or stop is called (stop waits for a prune under
// way to end).
func startAuditPrune(ctx context.Context, log *slog.Logger, st store.Store, retention time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			pruneAuditLog(ctx, log, st, retention)
			select {
			case <-ctx.Done():
				return
			case <-time.After(auditPruneEvery):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// pruneAuditLog prunes once, and logs what it deleted (or why not).
func pruneAuditLog(ctx context.Context, log *slog.Logger, st store.Store, retention time.Duration) {
	cut := time.Now().Add(-retention)
	days, err := audit.Prune(ctx, st, cut)
	n := 0
	for _, d := range days {
		n += d.Records
	}
	attrs := []any{"before", cut.UTC().Format(time.RFC3339), "days", len(days), "records", n}
	if len(days) > 0 {
		attrs = append(attrs, "first", days[0].Day, "last", days[len(days)-1].Day)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return // serve is stopping
	case err != nil:
		log.Warn("audit log not pruned; trying again in a day", append(attrs, "error", err)...)
	default:
		log.Info("audit log pruned", attrs...)
	}
}
