package main

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsift/toolsift/gateway/peruser"
	"github.com/toolsift/toolsift/internal/cachefile"
	"github.com/toolsift/toolsift/store"
)

// loginKeyEnv holds the key per-user logins are sealed with.
const loginKeyEnv = "TOOLSIFT_LOGIN_KEY"

// perUserFlags are serve's flags of per-user logins (docs/serve.md, "Team
// gateway: per-user logins").
type perUserFlags struct {
	servers   []string
	publicURL *string
	keyFile   *string
}

func addPerUserFlags(fs *flag.FlagSet) *perUserFlags {
	f := &perUserFlags{}
	listFlag(fs, &f.servers, "per-user", "reach url server `name` with each user's own OAuth login, served at --public-url/login/NAME (repeatable, or comma-separated); needs --listen, --public-url and a login key")
	f.publicURL = fs.String("public-url", "", "with --per-user: the gateway's base `url` as users' browsers reach it (https://gateway.example.com); the OAuth callback is URL/oauth/callback")
	f.keyFile = fs.String("login-key-file", "", "with --per-user: `file` holding the 32-byte key (base64 or hex) the per-user logins are sealed with (default $"+loginKeyEnv+")")
	return f
}

// options returns the per-user logins' options (peruser.New), or an
// error naming the flag at fault; nil without --per-user. st is serve's
// --store (nil: the default cache folder).
func (f *perUserFlags) options(e *env, listen string, st store.Store, log *slog.Logger) (*peruser.Options, error) {
	if len(f.servers) == 0 {
		if *f.publicURL != "" || *f.keyFile != "" {
			return nil, errors.New("--public-url and --login-key-file need --per-user")
		}
		return nil, nil
	}
	switch {
	case listen == "":
		return nil, errors.New("--per-user needs --listen: users log in through the gateway's web pages")
	case *f.publicURL == "":
		return nil, errors.New("--per-user needs --public-url, the gateway's address as users' browsers reach it")
	}
	key, err := readLoginKey(e, *f.keyFile)
	if err != nil {
		return nil, err
	}
	if isMemory(st) || st == nil {
		// No --store (or --no-cache, which keeps no cache, not no
		// logins): not the cache folder, which a cache cleaner may
		// empty (logging every user out), but one beside toolbench's
		// logins.
		if st, err = perUserStore(e); err != nil {
			return nil, err
		}
	}
	return &peruser.Options{Servers: f.servers, PublicURL: *f.publicURL, LoginKey: key, Store: st, Logger: log}, nil
}

// maxKeyFile bounds --login-key-file.
const maxKeyFile = 4 << 10

// readLoginKey reads the login key from file, else from $TOOLSIFT_LOGIN_KEY:
// 32 bytes written in base64 (openssl rand -base64 32) or hex. Errors
// name where the key came from, never the key.
func readLoginKey(e *env, file string) ([]byte, error) {
	src, text := "$"+loginKeyEnv, e.getenv(loginKeyEnv)
	if file != "" {
		// The cache's rules: a regular file, small, and on Unix not
		// writable by group or others.
		b, err := cachefile.ReadFile(file, maxKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--login-key-file: %w", err)
		}
		src, text = "--login-key-file "+file, string(b)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, fmt.Errorf("--per-user needs a login key to seal the logins with: set $%s or --login-key-file (a key of 32 random bytes: openssl rand -base64 32)", loginKeyEnv)
	}
	for _, dec := range []func(string) ([]byte, error){
		base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString,
	} {
		if k, err := dec(text); err == nil && len(k) == peruser.LoginKeySize {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%s: want %d bytes written in base64 or hex (openssl rand -base64 32); this is neither", src, peruser.LoginKeySize)
}

// perUserStore is where serve keeps per-user logins when --store does not
// say: a folder beside toolbench's logins
// (os.UserConfigDir()/toolsift/store, or $XDG_CONFIG_HOME's), not a cache,
// since clearing caches must not log users out.
func perUserStore(e *env) (store.Store, error) {
	d := e.getenv("XDG_CONFIG_HOME")
	if d == "" {
		var err error
		if d, err = os.UserConfigDir(); err != nil {
			return nil, fmt.Errorf("no folder for the per-user logins: %w", err)
		}
	}
	return store.NewDir(filepath.Join(d, "toolsift", "store"))
}
