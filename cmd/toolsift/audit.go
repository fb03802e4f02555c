package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/termsafe"
)

const auditSynopsis = `toolsift audit [--since DURATION|TIME] [--user USER] [--server SERVER] [--json] [--store FOLDER]

Prints the audit log that toolsift serve --audit writes: one record per tool call
(who, which tool of which server, when, how long, the outcome; never arguments or
results), oldest first, as a table or JSON lines.`

// audit runs toolsift audit.
func audit(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: %s\n\nFlags:\n", auditSynopsis)
		fs.PrintDefaults()
	}
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
	for rec, err := range gateway.AuditRecords(ctx, st, from) {
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
