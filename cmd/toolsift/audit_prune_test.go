package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/cmd/internal/cli"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
)

// seedAudit writes one audit record of user at each time into the store
// spec names, under its key as docs/serve.md ("Audit") gives it.
func seedAudit(t *testing.T, spec string, user string, times ...time.Time) {
	t.Helper()
	ctx := context.Background()
	st, err := cli.OpenStore(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, tm := range times {
		b, err := json.Marshal(audit.Record{Time: tm, User: user, Tool: "up__lookup", Server: "up", Outcome: "ok"})
		if err != nil {
			t.Fatal(err)
		}
		tm = tm.UTC()
		key := fmt.Sprintf("audit/%s/%019d-%016x.json", tm.Format(time.DateOnly), tm.UnixNano(), uint64(i)<<32|uint64(len(user)))
		if err := st.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
}

// auditUsers returns the users of the records toolsift audit --json
// prints, oldest first.
func auditUsers(t *testing.T, spec string) []string {
	t.Helper()
	code, out, stderr := runCmd(t, "audit", "--json", "--store", spec)
	if code != 0 {
		t.Fatalf("audit --json: exit %d: %s", code, stderr)
	}
	var users []string
	for l := range strings.Lines(out) {
		var rec audit.Record
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("audit --json line %q: %v", l, err)
		}
		users = append(users, rec.User)
	}
	return users
}

// TestAuditPrune: toolsift audit prune --before deletes the whole days
// over by the cut and prints them, over a folder and over PostgreSQL;
// the day the cut falls in and later days are kept; a cut in the future,
// or less than a day ago, is refused (exit 2) and deletes nothing.
func TestAuditPrune(t *testing.T) {
	for _, kind := range []string{"dir", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			spec := t.TempDir()
			if kind == "postgres" {
				// A password the test cluster does not ask for, which no
				// output may show.
				spec = pgtest.Start(t) + "&password=hunter2-pw-x"
			}
			today := time.Now().UTC().Truncate(24 * time.Hour)
			day := func(n int) time.Time { return today.AddDate(0, 0, -n) }
			seedAudit(t, spec, "old", day(9).Add(time.Hour), day(5).Add(time.Hour), day(5).Add(22*time.Hour))
			seedAudit(t, spec, "kept", day(4).Add(time.Minute), day(2), day(0).Add(time.Since(today)/2))

			for _, c := range []struct{ before, stderr string }{
				{"2h", "--before \"2h\": under one day: want 24h0m0s or more"},
				{"-72h", "under one day"},
				{"2099-01-01", "--before \"2099-01-01\": in the future"},
				{today.Format(time.DateOnly), "under one day ago: want one at least 24h0m0s ago, such as " + day(1).Format(time.DateOnly)},
				{"last week", "want a duration (720h) or a date or time"},
				{"", "--before is required"},
			} {
				code, out, stderr := runCmd(t, "audit", "prune", "--before", c.before, "--store", spec)
				if code != 2 || !strings.Contains(stderr, c.stderr) || out != "" {
					t.Errorf("audit prune --before %q: exit %d, stdout %q, stderr %q; want 2 and %q", c.before, code, out, stderr, c.stderr)
				}
			}
			if users := auditUsers(t, spec); len(users) != 6 {
				t.Fatalf("after refused prunes: %q, want the 6 records", users)
			}

			// Before day 4: days 9 and 5 go, day 4 (whose first minute
			// is past the cut) stays.
			code, out, stderr := runCmd(t, "audit", "prune", "--before", day(4).Format(time.DateOnly), "--store", spec)
			if code != 0 {
				t.Fatalf("audit prune: exit %d: %s", code, stderr)
			}
			want := fmt.Sprintf("%s\t1 records deleted\n%s\t2 records deleted\nDeleted 3 audit records of 2 days (%s to %s) from ",
				day(9).Format(time.DateOnly), day(5).Format(time.DateOnly), day(9).Format(time.DateOnly), day(5).Format(time.DateOnly))
			if !strings.HasPrefix(out, want) {
				t.Errorf("audit prune printed %q, want %q…", out, want)
			}
			if users := auditUsers(t, spec); !slices.Equal(users, []string{"kept", "kept", "kept"}) {
				t.Errorf("after the prune: %q, want the 3 kept records", users)
			}
			// 60h ago falls in day 2 or day 3: day 4 goes now.
			code, out, _ = runCmd(t, "audit", "prune", "--before", "60h", "--store", spec)
			if code != 0 || !strings.HasPrefix(out, day(4).Format(time.DateOnly)+"\t1 records deleted\n") {
				t.Errorf("audit prune --before 60h: exit %d, %q; want day 4's record deleted", code, out)
			}
			code, out, _ = runCmd(t, "audit", "prune", "--before", "60h", "--store", spec)
			if code != 0 || !strings.HasPrefix(out, "No audit records of days over by ") {
				t.Errorf("audit prune again: exit %d, %q; want nothing deleted", code, out)
			}
			if users := auditUsers(t, spec); len(users) != 2 {
				t.Errorf("records left %q, want the 2 of the last days", users)
			}
			_, out2, stderr := runCmd(t, "audit", "--user", "nobody", "--store", spec)
			if all := out + out2 + stderr; strings.Contains(all, "hunter2") || !strings.Contains(stderr, "No audit records in ") {
				t.Errorf("the store is named with its password, or not named: %q", all)
			}
		})
	}
}

// TestServeAuditRetention: serve --audit --audit-retention prunes the
// days over by the retention at start and again at each period (shortened
// here), logging what it deleted; the last days are kept. Bad values are
// refused before serve starts.
func TestServeAuditRetention(t *testing.T) {
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--audit-retention", "720h"}, "--audit-retention needs --audit"},
		{[]string{"--audit", "--audit-retention", "12h"}, "--audit-retention 12h0m0s: under one day"},
		{[]string{"--audit", "--audit-retention", "-1h"}, "want 0 (keep everything) or a positive duration"},
	} {
		code, _, stderr := runCmd(t, append([]string{"serve", "--config", "x.json"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.stderr) {
			t.Errorf("serve %q: exit %d, %q; want 2 and %q", c.args, code, stderr, c.stderr)
		}
	}

	defer func(d time.Duration) { auditPruneEvery = d }(auditPruneEvery)
	auditPruneEvery = 20 * time.Millisecond
	cache := t.TempDir()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	day := func(n int) time.Time { return today.AddDate(0, 0, -n) }
	seedAudit(t, cache, "old", day(40), day(31).Add(time.Hour), day(31).Add(2*time.Hour))
	seedAudit(t, cache, "kept", day(29), day(1))

	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	logs := &logWatch{wrote: make(chan struct{}, 1)}
	e := &env{stdin: strings.NewReader(""), stdout: &strings.Builder{}, stderr: logs, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- run(serveCtx, e, []string{"serve", "--config", upstreamConfig(t, "1"), "--store", cache,
			"--listen", "127.0.0.1:0", "--audit", "--audit-retention", "720h", "--connect-timeout", testenv.WaitLimit().String()})
	}()
	logs.waitFor(t, `msg="audit log pruned" before=`, ctx.Done())
	logs.waitFor(t, fmt.Sprintf(`days=2 records=3 first=%s last=%s`, day(40).Format(time.DateOnly), day(31).Format(time.DateOnly)), ctx.Done())
	if users := auditUsers(t, cache); !slices.Equal(users, []string{"kept", "kept"}) {
		t.Errorf("after serve's first prune: %q, want the 2 records of the last 30 days", users)
	}
	// A record another replica (with a clock far behind) wrote of an old
	// day goes at the next prune.
	seedAudit(t, cache, "late", day(35))
	logs.waitFor(t, fmt.Sprintf(`days=1 records=1 first=%s`, day(35).Format(time.DateOnly)), ctx.Done())
	if users := auditUsers(t, cache); !slices.Equal(users, []string{"kept", "kept"}) {
		t.Errorf("after serve's later prune: %q, want the 2 records of the last 30 days", users)
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("serve: exit %d\n%s", code, logs.String())
	}
}
