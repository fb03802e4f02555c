package postgres

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrRefused is wrapped by the error of Open when the server answered but
// refused what the URL asks: a password that does not match (or a role
// that does not exist, which password authentication does not tell
// apart), a role or a database that does not exist, a connection that
// pg_hba.conf does not let in, a database the role may not connect to, or
// toolsift's tables that the role may not create or use. The error names the URL without its password and
// the fix to apply; waiting does not help, so Open's caller should not
// retry. It does not wrap ErrUnavailable.
var ErrRefused = errors.New("postgres: server refused")

// refusal returns the fix for err when it is the server refusing role
// user the connection to database, or toolsift's schema in it; ok is false
// for any other error (an unreachable server, one starting up or out of
// connections: those pass).
func refusal(err error, user, database string) (fix string, ok bool) {
	r, d := ident(user), ident(database)
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return "", false
	}
	msg := pg.Message
	switch pg.Code {
	case "28P01": // invalid_password
		return fmt.Sprintf("the password in the URL (or $PGPASSWORD, or the password file) is not role %s's, or there is no role %s (password authentication does not tell which): as a superuser (sudo -u postgres psql) run CREATE ROLE %s LOGIN PASSWORD '…' or ALTER ROLE %s PASSWORD '…', or correct the URL", r, r, r, r), true
	case "28000": // invalid_authorization_specification
		switch {
		case strings.HasPrefix(msg, "role ") && strings.HasSuffix(msg, "does not exist"):
			return fmt.Sprintf("create the role as a superuser (sudo -u postgres psql): CREATE ROLE %s LOGIN PASSWORD '…'; or correct the user in the URL", r), true
		case strings.HasPrefix(msg, "no pg_hba.conf entry"):
			return fmt.Sprintf("pg_hba.conf has no line for this connection: add one for database %s and role %s (local for the unix socket, host for TCP, hostssl to require TLS) and reload the server (SELECT pg_reload_conf()), or connect as an existing line allows", d, r), true
		case strings.HasPrefix(msg, "Peer authentication failed"), strings.HasPrefix(msg, "Ident authentication failed"):
			return fmt.Sprintf("the server admits role %s on this connection only for the operating-system user of the same name (peer or ident authentication, pg_hba.conf): run toolsift as that user, or connect over TCP with a password (host=127.0.0.1)", r), true
		case strings.Contains(msg, "is not permitted to log in"):
			return fmt.Sprintf("as a superuser: ALTER ROLE %s LOGIN", r), true
		}
		return fmt.Sprintf("the server does not let role %s in (pg_hba.conf and the role's attributes say why)", r), true
	case "3D000": // invalid_catalog_name
		return fmt.Sprintf("create the database as a superuser (sudo -u postgres psql): CREATE DATABASE %s OWNER %s; or correct the database in the URL", d, r), true
	case "42501": // insufficient_privilege
		switch {
		case strings.HasPrefix(msg, "permission denied for database"):
			return fmt.Sprintf("as a superuser or the database's owner: GRANT CONNECT ON DATABASE %s TO %s", d, r), true
		case strings.HasPrefix(msg, "permission denied for schema"):
			return fmt.Sprintf("toolsift creates its tables at its first start: as a superuser, make role %s the database's owner (ALTER DATABASE %s OWNER TO %s) or, in the database, GRANT USAGE, CREATE ON SCHEMA public TO %s", r, d, r, r), true
		case strings.HasPrefix(msg, "permission denied for"), strings.HasPrefix(msg, "must be owner of"):
			return fmt.Sprintf("toolsift's tables belong to another role: as their owner or a superuser, in the database, GRANT SELECT, INSERT, UPDATE, DELETE ON toolsift_store, toolsift_store_schema, toolsift_rate_limit TO %s and GRANT USAGE ON SEQUENCE toolsift_store_rev TO %s (or ALTER TABLE … OWNER TO %s)", r, r, r), true
		}
		return fmt.Sprintf("role %s lacks a privilege toolsift needs (docs/serve.md, \"Team gateway: PostgreSQL from an empty server\")", r), true
	}
	return "", false
}

// plainIdent is an identifier PostgreSQL takes as written, unquoted.
var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_$]*$`)

// ident is name as an SQL identifier: unquoted when it can be.
func ident(name string) string {
	if plainIdent.MatchString(name) {
		return name
	}
	return pgx.Identifier{name}.Sanitize()
}
