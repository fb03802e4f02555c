// Package gateway is toolsift serve as a library: one MCP server standing
// in for every server of a config, which a Go program mounts on its own
// HTTP mux (Handler) or runs on a stream such as stdio (ServeStdio).
//
// It lists a handful of tools (search_tools, call_tool and the pinned
// tools); the tools search_tools finds join the list of the session that
// searched (tools/list_changed), up to Options.MaxTools, the least
// recently used leaving first. Calls go to the Toolset, which routes them
// to the upstream server (starting a lazy one on its first call).
// Resources, prompts, completions, progress, upstream log messages and
// sampling or elicitation requests pass through.
//
// A listed tool whose definition changes is listed anew; one the Toolset
// no longer has (removed upstream, or its server down) leaves the list
// until it comes back. A tool that changed since it was first seen (a rug
// pull) is quarantined: off the list, out of search_tools' answers and
// refused when called, with a result naming toolbench trust, until the
// user accepts it. Open wires the Toolset's hooks so that each change
// reaches the clients at once; sessions also check before each tools/list.
//
// The HTTP handler carries every protection of toolsift serve --listen: a
// bearer token (Options.Token), the Origin check, sessions bound to the
// credential that opened them and capped, a deadline and a size limit on
// request bodies. The connections are the server's: LimitListener caps
// them as toolsift serve --max-conns does.
//
// The API speaks no go-sdk type: a program that mounts a Gateway compiles
// the SDK through this package but never names it.
//
// Quick start:
//
//	cfg, err := config.Load("mcp.json", nil)
//	if err != nil { ... }
//	gw, err := gateway.Open(ctx, cfg, &gateway.Options{Token: os.Getenv("TOKEN")})
//	if err != nil { ... }
//	defer gw.Close()
//	mux := http.NewServeMux()
//	mux.Handle("/mcp", gw.Handler())
//	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
//	log.Fatal(srv.ListenAndServe())
package gateway
