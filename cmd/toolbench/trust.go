package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

func init() {
	register(command{name: "trust", summary: "accept the new version of a server's changed tools (see list's warnings)", run: runTrust})
}

// runTrust accepts what a server lists now as the version of its tools to
// compare later listings with (upstream.Hub.Trust): the tools list and run
// warned about as "changed since first seen" are no longer reported and
// get their readOnlyHint back.
func runTrust(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "trust", "--config mcp.json SERVER [TOOL...] [--input ID=VALUE] [--quiet] [--timeout 30s]")
	config := fs.String("config", "", "mcpServers config `file` (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "per-server connect `timeout`, for servers whose config sets none")
	cache := cacheFlags(fs)
	quiet := quietFlag(fs)
	inputs := inputFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *config == "":
		return usageError(fs, "--config is required")
	case fs.NArg() == 0:
		return usageError(fs, "name the server whose tools to trust")
	case *timeout <= 0:
		return usageError(fs, "--timeout %v: want a positive duration", *timeout)
	}
	server, tools := fs.Arg(0), fs.Args()[1:]
	c := connection{hub: upstream.HubOptions{Timeout: *timeout, MaxRestarts: -1, Start: upstream.StartEager}, inputs: inputs}
	var o toolsift.Options
	if err := cache(ctx, &o); err != nil {
		return err
	}
	if _, mem := o.Store.(*store.Memory); mem {
		return usageError(fs, "--no-cache: trust keeps what it accepts in the store")
	}
	ts, hub, _, err := openToolset(ctx, e, *config, c, o, *quiet)
	if err != nil {
		return err
	}
	defer ts.Close()
	var changed []upstream.ChangedTool
	for _, st := range ts.Status() {
		if st.Name == server {
			if st.State != upstream.StateReady {
				return fmt.Errorf("server %s is %s: %s", server, st.State, termsafe.String(fmt.Sprint(st.Err)))
			}
			changed = st.Changed
		}
	}
	accepted, err := hub.Trust(ctx, server, tools...)
	if err != nil {
		return err
	}
	if len(accepted) == 0 {
		fmt.Fprintf(e.stdout, "%s: no changed tools to accept\n", server)
		return nil
	}
	what := map[string]string{}
	for _, c := range changed {
		what[c.Name] = strings.Join(c.What, ", ")
	}
	for _, name := range accepted {
		if w := what[name]; w != "" {
			fmt.Fprintf(e.stdout, "accepted %s (%s)\n", name, termsafe.String(w))
		} else {
			fmt.Fprintf(e.stdout, "accepted %s\n", name)
		}
	}
	return nil
}
