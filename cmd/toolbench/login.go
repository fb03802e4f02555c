package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/store"
)

func init() {
	register(command{name: "login", summary: "log in to the remote MCP servers of a config file that ask for it (OAuth)", run: runLogin})
	register(command{name: "logout", summary: "forget the logins of a config file's remote servers", run: runLogout})
}

// authStore returns the store of logins every command uses, its errors
// naming the login command for config; nil (with a warning) when the user
// has no config folder: servers that need a login then fail as they would
// without it.
func authStore(e *env, config string) *oauth.Store {
	opts := &oauth.Options{LoginHint: "toolbench login --config " + shellQuote(config)}
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
		// As os.UserConfigDir on Linux, and on every system, so that a
		// test (or a user) can move the logins.
		st, err := store.NewDir(filepath.Join(d, "toolsift"))
		if err != nil {
			fmt.Fprintf(e.stderr, "warning: logins: %v\n", err)
			return nil
		}
		opts.Store = st
	}
	s, err := oauth.New(opts)
	if err != nil {
		fmt.Fprintf(e.stderr, "warning: %v\n", err)
		return nil
	}
	return s
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/@:+=-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// remoteServers loads the config at path and returns the url servers named in args, or
// all of them (enabled) when args is empty, sorted.
func remoteServers(path string, inputs map[string]string, args []string) ([]string, *config.Config, error) {
	cfg, err := config.Load(path, &config.Options{Inputs: inputs})
	if err != nil {
		return nil, nil, err
	}
	var names []string
	if len(args) == 0 {
		for name, sc := range cfg.Servers {
			if sc.URL != "" && !sc.Disabled {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return nil, nil, fmt.Errorf("%s has no remote (url) servers", path)
		}
	}
	for _, name := range args {
		sc, ok := cfg.Servers[name]
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("%s has no server %q", path, name)
		case sc.URL == "":
			return nil, nil, fmt.Errorf("server %q is not a remote (url) server: it needs no login", name)
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, cfg, nil
}

// loginTargets parses login's or logout's flags and returns the url
// servers they name (all of the config's when none is named), the config
// and the store of logins. timeout is login's --timeout (nil for logout).
func loginTargets(e *env, fs *flag.FlagSet, args []string, configPath *string, timeout *time.Duration, inputs map[string]string) ([]string, *config.Config, *oauth.Store, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, nil, nil, err
	}
	switch {
	case *configPath == "":
		return nil, nil, nil, usageError(fs, "--config is required")
	case timeout != nil && *timeout <= 0:
		return nil, nil, nil, usageError(fs, "--timeout %v: want a positive duration", *timeout)
	}
	names, cfg, err := remoteServers(*configPath, inputs, fs.Args())
	if err != nil {
		return nil, nil, nil, err
	}
	store := authStore(e, *configPath)
	if store == nil {
		return nil, nil, nil, errors.New("no folder to keep logins in")
	}
	return names, cfg, store, nil
}

func runLogin(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "login", "--config mcp.json [--no-browser] [--timeout 5m] [--input ID=VALUE] [SERVER...]")
	config := fs.String("config", "", "mcpServers config `file` (required)")
	noBrowser := fs.Bool("no-browser", false, "print the authorization URL only; don't open a browser")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for each server's login in the browser")
	inputs := inputFlag(fs)
	names, cfg, store, err := loginTargets(e, fs, args, config, timeout, inputs)
	if err != nil {
		return err
	}
	var failed []string
	for _, name := range names {
		sc := cfg.Servers[name]
		if sc.Err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", name, sc.Err)
			failed = append(failed, name)
			continue
		}
		opts := &oauth.LoginOptions{Header: http.Header{}, Open: func(ctx context.Context, authURL string) error {
			if err := oauth.CheckBrowserURL(authURL); err != nil {
				return err // Login checked it; the opener runs any scheme
			}
			opened := !*noBrowser && openBrowser(e, authURL)
			if opened {
				fmt.Fprintf(e.stderr, "Opened a browser to log in to %s; if it did not show, open this URL:\n", name)
			} else {
				fmt.Fprintf(e.stderr, "Open this URL in a browser to log in to %s:\n", name)
			}
			fmt.Fprintln(e.stdout, termsafe.String(authURL))
			fmt.Fprintf(e.stderr, "Waiting for the browser (up to %s)...\n", *timeout)
			return nil
		}}
		for k, v := range sc.Headers {
			opts.Header.Set(k, v)
		}
		if o := sc.OAuth; o != nil {
			opts.ClientID, opts.ClientSecret, opts.ClientMetadataURL = o.ClientID, o.ClientSecret, o.ClientMetadataURL
			opts.Scopes, opts.CallbackPort = o.Scopes, o.CallbackPort
		}
		lctx, cancel := context.WithTimeout(ctx, *timeout)
		g, err := store.Login(lctx, name, sc.URL, opts)
		cancel()
		switch {
		case errors.Is(err, oauth.ErrNoLoginNeeded):
			fmt.Fprintf(e.stdout, "%s: needs no login\n", name)
		case err != nil:
			// The authorization server's error, error_description and
			// URLs are in it: escaped (docs/limits.md, Terminal output).
			fmt.Fprintf(e.stderr, "%s: %s\n", name, termsafe.String(err.Error()))
			failed = append(failed, name)
		default:
			fmt.Fprintf(e.stdout, "%s: logged in at %s\n", name, termsafe.String(g.Issuer+describeGrant(g)))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s failed: %s", runPlural(len(failed), "login"), strings.Join(failed, ", "))
	}
	return nil
}

func describeGrant(g *oauth.Grant) string {
	var parts []string
	if len(g.Scopes) > 0 {
		parts = append(parts, "scopes "+strings.Join(g.Scopes, " "))
	}
	switch {
	case g.Expiry.IsZero():
	case g.Refreshable:
		parts = append(parts, "refreshed when it expires")
	default:
		parts = append(parts, fmt.Sprintf("expires in %s, then log in again", time.Until(g.Expiry).Round(time.Minute)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// openBrowser starts the system's browser on url where there is one to
// show it (a display on Linux and BSD); it does not wait for it.
func openBrowser(e *env, url string) bool {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		if e.getenv("DISPLAY") == "" && e.getenv("WAYLAND_DISPLAY") == "" {
			return false
		}
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return false
	}
	go cmd.Wait()
	return true
}

func runLogout(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "logout", "--config mcp.json [--input ID=VALUE] [SERVER...]")
	config := fs.String("config", "", "mcpServers config `file` (required)")
	inputs := inputFlag(fs)
	names, cfg, store, err := loginTargets(e, fs, args, config, nil, inputs)
	if err != nil {
		return err
	}
	for _, name := range names {
		had, err := store.Logout(ctx, cfg.Servers[name].URL)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		case had:
			fmt.Fprintf(e.stdout, "%s: logged out\n", name)
		default:
			fmt.Fprintf(e.stdout, "%s: was not logged in\n", name)
		}
	}
	return nil
}
