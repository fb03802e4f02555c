package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift/cmd/internal/cli"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/upstream"
)

const tokenSynopsis = `toolsift token create --user NAME [--team TEAM]... [--name TEXT] [--store FOLDER|URL]
       toolsift token list [--json] [--store FOLDER|URL]
       toolsift token revoke ID [--store FOLDER|URL]

Per-user API tokens for toolsift serve --listen --tokens: each request must carry
one (Authorization: Bearer tsk_...), and its user is in every log line and audit
record. create prints the new token's secret once, on stdout; only its SHA-256 is
stored. revoke ends a token: the serve replicas over the same store refuse it
within a second.`

// openStoreFlag opens the store a subcommand's --store names (a folder,
// as cli.OpenStore takes it), or the default one, serve's
// (upstream.DefaultStore: the user cache folder's toolsift), and a name for it
// in messages (a PostgreSQL URL without its password).
func openStoreFlag(ctx context.Context, spec string) (store.Store, string, error) {
	if spec != "" {
		st, err := cli.OpenStore(ctx, spec, nil)
		if pg, ok := st.(*postgres.Store); ok {
			return st, pg.String(), err
		}
		return st, spec, err
	}
	d, err := upstream.DefaultStore()
	if err != nil {
		return nil, "", fmt.Errorf("no store folder: %w (give --store FOLDER)", err)
	}
	return d, d.Path(), nil
}

// storeFlag adds --store to fs.
func storeFlag(fs *flag.FlagSet) *string {
	return fs.String("store", "", "the store serve reads: a `folder` (default the user cache folder's toolsift) or the postgres:// URL replicas share, as serve's --store")
}

// token runs toolsift token.
func token(ctx context.Context, e *env, args []string) error {
	usage := func() { fmt.Fprintf(e.stderr, "Usage: %s\n", tokenSynopsis) }
	if len(args) == 0 {
		usage()
		return errUsage
	}
	switch args[0] {
	case "create":
		return tokenCreate(ctx, e, args[1:])
	case "list":
		return tokenList(ctx, e, args[1:])
	case "revoke":
		return tokenRevoke(ctx, e, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(e.stdout, "Usage: %s\n", tokenSynopsis)
		return flag.ErrHelp
	}
	fmt.Fprintf(e.stderr, "toolsift token: unknown command %q (want create, list or revoke)\n\n", args[0])
	usage()
	return errUsage
}

func tokenCreate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "token create", "toolsift token create --user NAME [--team TEAM]... [--name TEXT] [--store FOLDER|URL]")
	user := fs.String("user", "", "the `user` the token identifies (letters, digits and -_.@+; required)")
	var teams []string
	listFlag(fs, &teams, "team", "a `team` the user belongs to (repeatable, or comma-separated)")
	name := fs.String("name", "", "what the token is for (`text`: laptop, ci)")
	folder := storeFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	case strings.TrimSpace(*user) == "":
		return usageError(fs, "--user is required: whom the token identifies")
	}
	st, where, err := openStoreFlag(ctx, *folder)
	if err != nil {
		return err
	}
	defer st.Close()
	secret, tok, err := authn.NewTokens(st).Create(ctx, *user, teams, *name)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, secret)
	fmt.Fprintf(e.stderr, "Token %s for %s, in %s. Its secret (above) is shown this once: give it to %s,\n"+
		"whose client sends it as the header \"Authorization: Bearer tsk_...\" to toolsift serve --listen --tokens.\n"+
		"toolsift token revoke %s ends it.\n", tok.ID, termsafe.String(tok.User), where, termsafe.String(tok.User), tok.ID)
	return nil
}

func tokenList(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "token list", "toolsift token list [--json] [--store FOLDER|URL]")
	asJSON := fs.Bool("json", false, "one JSON object per line instead of a table")
	folder := storeFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	st, where, err := openStoreFlag(ctx, *folder)
	if err != nil {
		return err
	}
	defer st.Close()
	list, err := authn.NewTokens(st).List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		for _, t := range list {
			if err := enc.Encode(t); err != nil {
				return err
			}
		}
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintf(e.stderr, "No tokens in %s (toolsift token create makes one).\n", where)
		return nil
	}
	w := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tUSER\tTEAMS\tNAME\tCREATED")
	for _, t := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.ID, termsafe.String(t.User), termsafe.String(strings.Join(t.Teams, ",")),
			termsafe.String(t.Name), t.Created.Local().Format(time.DateTime))
	}
	return w.Flush()
}

func tokenRevoke(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "token revoke", "toolsift token revoke ID [--store FOLDER|URL]")
	folder := storeFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() == 0:
		return usageError(fs, "which token? Give its ID (toolsift token list shows them)")
	case fs.NArg() > 1:
		return usageError(fs, "one ID at a time (got %d arguments)", fs.NArg())
	}
	st, where, err := openStoreFlag(ctx, *folder)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := authn.NewTokens(st).Revoke(ctx, fs.Arg(0)); err != nil {
		if errors.Is(err, authn.ErrUnknownToken) {
			return fmt.Errorf("%w; toolsift token list --store %s shows the tokens", err, where)
		}
		return err
	}
	fmt.Fprintf(e.stderr, "Revoked; toolsift serve refuses it within a second.\n")
	return nil
}

// identityFlags are serve's flags of identities and audit (issue 33):
// per-user API tokens, bearer JWTs of an OIDC issuer, the audit log. The
// store is serve's --store (the default folder), where toolsift token and toolsift
// audit look by default.
type identityFlags struct {
	tokens, audit                 bool
	issuer, audience, user, teams string
}

func (f *identityFlags) add(fs *flag.FlagSet) {
	fs.BoolVar(&f.tokens, "tokens", false, "with --listen: require a per-user API token (toolsift token create) on every request, instead of one shared token; the user is in every log line and audit record")
	fs.StringVar(&f.issuer, "oidc-issuer", "", "with --listen: accept bearer JWTs this OpenID Connect issuer (`URL`, as its tokens' iss) signed, beside --tokens or alone")
	fs.StringVar(&f.audience, "oidc-audience", "", "the `aud` a JWT must hold: this gateway's client id or API identifier at the issuer (required with --oidc-issuer)")
	fs.StringVar(&f.user, "oidc-user-claim", "email", "the JWT `claim` naming the user")
	fs.StringVar(&f.teams, "oidc-teams-claim", "groups", "the JWT `claim` listing the user's teams")
	fs.BoolVar(&f.audit, "audit", false, "record every tool call (who, which tool, when, how long, the outcome; no arguments) in the store, before its result returns; toolsift audit prints them")
}

// identities reports whether requests are to carry a user's credential.
func (f *identityFlags) identities() bool { return f.tokens || f.issuer != "" }

// check refuses the flags where they cannot work.
func (f *identityFlags) check(e *env, listen, tokenFile string) error {
	switch {
	case f.identities() && listen == "":
		return errors.New("--tokens and --oidc-issuer need --listen (over stdio the client is the user who started serve)")
	case f.identities() && (tokenFile != "" || strings.TrimSpace(e.getenv(tokenEnv)) != ""):
		return fmt.Errorf("--tokens or --oidc-issuer, and a shared token ($%s or --token-file): choose one (per-user credentials name who calls; a shared one does not)", tokenEnv)
	case f.issuer != "" && f.audience == "":
		return errors.New("--oidc-issuer needs --oidc-audience: without it a token the issuer made for any other application would do")
	case f.issuer == "" && f.audience != "":
		return errors.New("--oidc-audience needs --oidc-issuer")
	}
	return nil
}

// identities are what the identity flags make, over serve's store.
type identities struct {
	tokens *authn.Tokens // --tokens
	oidc   *authn.OIDC   // --oidc-issuer
	audit  store.Store   // --audit: where the records go
}

// authenticate puts h behind what every request must carry: the per-user
// credentials of --tokens and --oidc-issuer, else the shared token (none:
// h as it is, on a loopback-only address), each refusal logged and its
// 401 saying what to send. With --tokens the store's watch runs until stop
// is called (which waits for it to end), so that a token revoked through
// another serve over the same store is refused here at once; a watch that
// fails is logged, and revocations then arrive within
// authn.TokenCacheTTL.
func (ids identities) authenticate(ctx context.Context, log *slog.Logger, h http.Handler, token string) (_ http.Handler, authenticated bool, stop func()) {
	const apiToken = "this toolsift serve needs your API token (Authorization: Bearer tsk_...; toolsift token create makes one)"
	var v authn.Verifier
	var hint string
	switch {
	case ids.tokens != nil && ids.oidc != nil:
		v, hint = ids.tokens.Or(ids.oidc), apiToken
	case ids.tokens != nil:
		v, hint = ids.tokens, apiToken
	case ids.oidc != nil:
		v, hint = ids.oidc, "this toolsift serve needs a JWT of its OpenID Connect issuer (Authorization: Bearer ...)"
	case token != "":
		v, hint = authn.SharedToken(token), "this toolsift serve needs its bearer token (Authorization: Bearer ...)"
	default:
		return h, false, func() {}
	}
	h = authn.Require(v, &authn.Options{Logger: log, Hint: hint})(h)
	if ids.tokens == nil {
		return h, true, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ids.tokens.Watch(ctx); err != nil {
			log.Warn("watching API tokens for revocations stopped", "error", err)
		}
	}()
	return h, true, func() { cancel(); <-done }
}

// options are the flags as identities (API tokens, OIDC, the audit log's
// store), over st, serve's store (nil: the default folder). The issuer's
// discovery document is read now.
func (f *identityFlags) options(ctx context.Context, st store.Store) (identities, error) {
	var o identities
	if f.issuer != "" {
		var err error
		if o.oidc, err = authn.NewOIDC(ctx, authn.OIDCOptions{Issuer: f.issuer, Audience: f.audience, UserClaim: f.user, TeamsClaim: f.teams}); err != nil {
			return o, err
		}
	}
	if !f.tokens && !f.audit {
		return o, nil
	}
	if isMemory(st) {
		return o, errors.New("--tokens and --audit keep tokens and records in the store: not with --no-cache")
	}
	if st == nil {
		d, err := upstream.DefaultStore()
		if err != nil {
			return o, fmt.Errorf("--tokens and --audit need a store: %w (give --store FOLDER)", err)
		}
		st = d
	}
	if f.tokens {
		o.tokens = authn.NewTokens(st)
	}
	if f.audit {
		o.audit = st
	}
	return o, nil
}
