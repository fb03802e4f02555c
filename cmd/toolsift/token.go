package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/store"
)

const tokenSynopsis = `toolsift token create --user NAME [--team TEAM]... [--name TEXT] [--store FOLDER]
       toolsift token list [--json] [--store FOLDER]
       toolsift token revoke ID [--store FOLDER]

Per-user API tokens for toolsift serve --listen --tokens: each request must carry
one (Authorization: Bearer tsk_...), and its user is in every log line and audit
record. create prints the new token's secret once, on stdout; only its SHA-256 is
stored. revoke ends a token: the serve replicas over the same store refuse it
within a second.`

// defaultStoreDir is where toolsift keeps what it stores when no folder is
// given: the cache folder of toolsift serve (os.UserCacheDir()/toolsift),
// so that serve --tokens and --audit find what these commands write.
func defaultStoreDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no store folder: %w (give --store FOLDER)", err)
	}
	return filepath.Join(d, "toolsift"), nil
}

// openStore opens the store in folder, or the default one.
func openStore(folder string) (*store.Dir, error) {
	if folder == "" {
		var err error
		if folder, err = defaultStoreDir(); err != nil {
			return nil, err
		}
	}
	return store.NewDir(folder)
}

// storeFlag adds --store to fs.
func storeFlag(fs *flag.FlagSet) *string {
	return fs.String("store", "", "`folder` of the store serve reads (default the user cache folder's toolsift, as serve's --cache-dir)")
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

func tokenFlags(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("token "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

func tokenCreate(ctx context.Context, e *env, args []string) error {
	fs := tokenFlags(e, "create", "toolsift token create --user NAME [--team TEAM]... [--name TEXT] [--store FOLDER]")
	user := fs.String("user", "", "the `user` the token identifies (letters, digits and -_.@+; required)")
	var teams []string
	fs.Func("team", "a `team` the user belongs to (repeatable, or comma-separated)", func(s string) error {
		for t := range strings.SplitSeq(s, ",") {
			if t = strings.TrimSpace(t); t != "" {
				teams = append(teams, t)
			}
		}
		return nil
	})
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
	st, err := openStore(*folder)
	if err != nil {
		return err
	}
	defer st.Close()
	secret, tok, err := gateway.NewTokens(st).Create(ctx, *user, teams, *name)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, secret)
	fmt.Fprintf(e.stderr, "Token %s for %s, in %s. Its secret (above) is shown this once: give it to %s,\n"+
		"whose client sends it as the header \"Authorization: Bearer tsk_...\" to toolsift serve --listen --tokens.\n"+
		"toolsift token revoke %s ends it.\n", tok.ID, termsafe.String(tok.User), st.Path(), termsafe.String(tok.User), tok.ID)
	return nil
}

func tokenList(ctx context.Context, e *env, args []string) error {
	fs := tokenFlags(e, "list", "toolsift token list [--json] [--store FOLDER]")
	asJSON := fs.Bool("json", false, "one JSON object per line instead of a table")
	folder := storeFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	st, err := openStore(*folder)
	if err != nil {
		return err
	}
	defer st.Close()
	list, err := gateway.NewTokens(st).List(ctx)
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
		fmt.Fprintf(e.stderr, "No tokens in %s (toolsift token create makes one).\n", st.Path())
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
	fs := tokenFlags(e, "revoke", "toolsift token revoke ID [--store FOLDER]")
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
	st, err := openStore(*folder)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := gateway.NewTokens(st).Revoke(ctx, fs.Arg(0)); err != nil {
		if errors.Is(err, gateway.ErrUnknownToken) {
			return fmt.Errorf("%w; toolsift token list --store %s shows the tokens", err, st.Path())
		}
		return err
	}
	fmt.Fprintf(e.stderr, "Revoked; toolsift serve refuses it within a second.\n")
	return nil
}

// checkIdentityFlags refuses serve's --tokens where it cannot work.
func checkIdentityFlags(e *env, listen, tokenFile string, tokens bool) error {
	switch {
	case tokens && listen == "":
		return errors.New("--tokens needs --listen (over stdio the client is the user who started serve)")
	case tokens && (tokenFile != "" || strings.TrimSpace(e.getenv(tokenEnv)) != ""):
		return fmt.Errorf("--tokens and a shared token ($%s or --token-file): choose one (per-user tokens name who calls; a shared one does not)", tokenEnv)
	}
	return nil
}

// identityOptions are serve's --tokens and --audit as gateway.Options
// (Tokens, Audit), over the store in the cache folder (cacheDir, or the
// default one), which toolsift token and toolsift audit read by default.
func identityOptions(cacheDir string, tokens, audit bool) (gateway.Options, error) {
	var o gateway.Options
	if !tokens && !audit {
		return o, nil
	}
	st, err := openStore(cacheDir)
	if err != nil {
		return o, err
	}
	if tokens {
		o.Tokens = gateway.NewTokens(st)
	}
	if audit {
		o.Audit = st
	}
	return o, nil
}
