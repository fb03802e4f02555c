package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/store/postgres"
)

// as returns u with its user (and password, when not empty) replaced,
// and its database when db is not empty.
func as(t *testing.T, u, user, password, db string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.User(user)
	if password != "" {
		p.User = url.UserPassword(user, password)
	}
	if db != "" {
		p.Path, p.RawPath = "/"+db, ""
	}
	return p.String()
}

// wantRefused checks that err is Open's refusal, not "unavailable": it
// wraps ErrRefused, names the URL without its password, says what the
// server said and the fix, and never shows the password.
func wantRefused(t *testing.T, what string, err error, rawURL, password string, says ...string) {
	t.Helper()
	if !errors.Is(err, postgres.ErrRefused) || errors.Is(err, postgres.ErrUnavailable) {
		t.Errorf("%s: Open: %v, want ErrRefused and not ErrUnavailable", what, err)
		return
	}
	msg := err.Error()
	t.Logf("%s: %s", what, msg)
	if password != "" && strings.Contains(msg, password) {
		t.Errorf("%s: the error shows the password: %s", what, msg)
	}
	named := rawURL
	if password != "" {
		named = strings.Replace(rawURL, ":"+password+"@", ":REDACTED@", 1)
	}
	if !strings.Contains(msg, named) {
		t.Errorf("%s: the error does not name %s: %s", what, named, msg)
	}
	for _, s := range says {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: the error does not say %q: %s", what, s, msg)
		}
	}
}

// TestOpenRefused: a server that answers but refuses (a wrong password, a
// role or a database that does not exist, no pg_hba.conf line, no CONNECT
// privilege, no right to create toolsift's tables or to use them) is
// reported as refused, with the fix, on a real server that asks for
// passwords; an unreachable one stays unavailable.
func TestOpenRefused(t *testing.T) {
	ctx := context.Background()
	c := pgtest.NewCluster(t)
	admin := connect(t, c.URL("postgres"))
	for _, stmt := range []string{
		`CREATE ROLE toolsift LOGIN PASSWORD 'right-pw-8123'`,
		`CREATE DATABASE toolsift OWNER toolsift`,
		`CREATE ROLE guest LOGIN PASSWORD 'guest-pw-4456'`,
		`CREATE DATABASE closed OWNER toolsift`,
		`REVOKE CONNECT ON DATABASE closed FROM PUBLIC`,
		`CREATE DATABASE elsewhere OWNER toolsift`,
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	admin.Close(ctx)
	c.SetHBA(t,
		"local all postgres trust",
		"local toolsift,closed,missing all scram-sha-256",
	)
	base := c.URL("toolsift")

	for _, tc := range []struct {
		name, user, password, db string
		says                     []string
	}{
		{"wrong password", "toolsift", "wrong-pw-7789", "", []string{
			`password authentication failed for user "toolsift"`, "ALTER ROLE toolsift PASSWORD '…'"}},
		{"role missing, password authentication", "ghost", "ghost-pw-3321", "", []string{
			`password authentication failed for user "ghost"`, "or there is no role ghost", "CREATE ROLE ghost LOGIN PASSWORD '…'"}},
		{"database missing", "toolsift", "right-pw-8123", "missing", []string{
			`database "missing" does not exist`, "CREATE DATABASE missing OWNER toolsift"}},
		{"no pg_hba.conf line", "toolsift", "right-pw-8123", "elsewhere", []string{
			`no pg_hba.conf entry for host "[local]", user "toolsift", database "elsewhere"`, "pg_hba.conf has no line for this connection", "SELECT pg_reload_conf()"}},
		{"no CONNECT privilege", "guest", "guest-pw-4456", "closed", []string{
			`permission denied for database "closed"`, "GRANT CONNECT ON DATABASE closed TO guest"}},
		{"may not create the tables", "guest", "guest-pw-4456", "", []string{
			`permission denied for schema public`, "GRANT USAGE, CREATE ON SCHEMA public TO guest", "ALTER DATABASE toolsift OWNER TO guest)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := as(t, base, tc.user, tc.password, tc.db)
			s, err := postgres.Open(ctx, u, nil)
			if err == nil {
				s.Close()
			}
			wantRefused(t, tc.name, err, u, tc.password, tc.says...)
		})
	}

	// The owner creates the tables; guest, who may not use them, is
	// refused, and with the privileges the docs list (no CREATE) opens
	// the store and writes.
	owner := as(t, base, "toolsift", "right-pw-8123", "")
	open(t, owner, nil)
	guest := as(t, base, "guest", "guest-pw-4456", "")
	_, err := postgres.Open(ctx, guest, nil)
	wantRefused(t, "tables of another role", err, guest, "guest-pw-4456",
		"permission denied for", "GRANT SELECT, INSERT, UPDATE, DELETE ON toolsift_store, toolsift_store_schema, toolsift_rate_limit TO guest", "GRANT USAGE ON SEQUENCE toolsift_store_rev TO guest")
	conn := connect(t, owner)
	for _, stmt := range []string{
		`GRANT SELECT, INSERT, UPDATE, DELETE ON toolsift_store, toolsift_store_schema, toolsift_rate_limit TO guest`,
		`GRANT USAGE ON SEQUENCE toolsift_store_rev TO guest`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := open(t, guest, nil).Put(ctx, "k", []byte("v")); err != nil {
		t.Errorf("guest, with the privileges granted: Put: %v", err)
	}
}

// TestOpenRoleMissing: on a server that lets roles in without a password
// (trust, peer: the server then tells), a role that does not exist is
// refused as such, with the CREATE ROLE to run.
func TestOpenRoleMissing(t *testing.T) {
	u := as(t, pgtest.Start(t), "ghost", "", "")
	_, err := postgres.Open(context.Background(), u, nil)
	wantRefused(t, "role missing", err, u, "", `role "ghost" does not exist`, "CREATE ROLE ghost LOGIN PASSWORD '…'")
}
