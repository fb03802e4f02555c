// Package gateway is toolsift serve as a library: one MCP server standing
// in for every server of a config, which a Go program mounts on its own
// HTTP mux (Handler) or runs on a stream such as stdio (ServeStdio).
//
// It lists a handful of tools (search_tools, call_tool and the pinned
// tools); the tools search_tools finds join the list of the session that
// searched (tools/list_changed), up to Options.Search.MaxTools, the least
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
// user accepts it. Open wires the Hub's and the Toolset's hooks so that each change
// reaches the clients at once; sessions also check before each tools/list.
//
// Over HTTP both MCP wires share one URL: a client of 2025-11-25 or
// before gets a session, whose list the found tools join; a client of
// 2026-07-28, which has no session (its revision rides in each request's
// Mcp-Protocol-Version header and _meta), gets the fixed list (search_tools,
// call_tool, the pinned tools) and calls a found tool by the name
// search_tools gave, or through call_tool. Options.HTTP.Stateless serves
// every client so. Such a client hears of changes to that list, and to the
// resources and prompts, on its subscriptions/listen stream, and of an
// upstream with pinned tools saying its tools changed, even when its
// list is the same (a client lists again at the cost of one list; a word
// not passed on could leave it with a stale list); an upstream's
// request for input during its call (sampling, elicitation, roots) reaches
// it as an input-required result (SEP-2322): an upstream of 2026-07-28's
// own, passed through, or, from an upstream of an earlier revision, one
// naming the call toolsift holds until the client's retry answers it.
// Upstream tool lists past their ttlMs are listed again before a client's
// tools/list or search_tools.
//
// Options.Policy (a config.Policy: docs/serve.md, "Team gateway: policy")
// scopes what each caller sees and calls, by the Identity an
// authenticating middleware in front of Handler sets on the request
// (authn.Require, or authn.WithIdentity from a middleware of your own;
// ServeStdio's ctx for stdio). It holds on every route, both wires:
// tools/list, search_tools (a tool out of scope is not ranked at all),
// tools/call and call_tool, resources, templates, prompts, completions
// and subscriptions (a 2026-07-28 subscriptions/listen stream's too; an
// update reaches a subscriber only from a server of its scope), and the
// list changes a 2026-07-28 client hears on its subscriptions/listen
// stream (only those of what it may see); what
// is out of scope is answered as what does not exist, error texts
// included. The policy's rate limits (config.PolicyLimit) are token
// buckets in this process, checked before a call reaches its upstream
// and before a search; a refused request gets a tool error naming the
// limit and the seconds to wait. SetPolicy replaces the policy while
// serving, keeping the buckets of the limits it did not change.
//
// The HTTP handler carries the protections of toolsift serve --listen
// (Options.HTTP): the Origin check, sessions bound to the credential that
// opened them and capped, a deadline and a size limit on request bodies.
// The connections are the server's: LimitListener caps them as toolsift
// serve --max-conns does. Who may call is not the handler's to decide:
// package authn's Require, in front of it, refuses a request without a
// valid bearer credential and names its caller (per-user API tokens,
// bearer JWTs of an OpenID Connect issuer, one shared token, or a Verifier
// of your own); the caller's user is named in every log line and audit
// record.
//
// Options.Audit, an audit.Log, keeps one record per tools/call (who,
// which tool of which server, when, how long, the outcome, those the
// Gateway decides itself included; never arguments or results), written
// before the call's result returns (kept in memory, and written later,
// while the store cannot take it); package audit reads them back and
// prunes them (toolsift audit, serve --audit-retention).
//
// Options.Telemetry.Metrics, from NewMetrics, are the Gateway's Prometheus metrics,
// a prometheus.Collector to register with a registry of your own:
// requests by method and outcome, searches and their latency, calls by
// server and outcome with their latency, and, read at each scrape, each
// server's state and tools, the quarantined tools, the sessions and listen
// streams open and the audit log's queue (docs/serve.md, "Metrics");
// NewMetrics(maxUsers) with maxUsers > 0 adds a bounded user label to
// the request and call counters.
//
// Options.Telemetry.Tracer, an OpenTelemetry trace.TracerProvider, traces each MCP
// request in a server span (the child of the client's traceparent, from
// params._meta or the HTTP headers), with a span for each search, each
// store operation and each upstream call, whose trace context HTTP
// upstream servers get in their traceparent header (docs/serve.md,
// "Traces"). With either, Open instruments Options.Toolset.Store
// (InstrumentStore: operations counted and traced); give the same
// instrumented store to the audit log, tokens and logins that share it.
//
// Per-user servers (Options.PerUser, a PerUser: package peruser's Logins)
// are remote servers each user reaches with the user's own OAuth login: a
// user's calls go out on a session of that user's own, with that user's
// token, and a user without a login gets a tool result with the link to
// open; until someone has logged in to such a server (whose login lists
// its tools for the catalog), a search_tools answer names it with its
// login page (think.Incomplete.Login, from a PerUser that is a
// LoginPender), not as a server that failed. The login pages, the sealed
// store of the logins and the users' sessions are peruser's. See
// docs/serve.md, "Team gateway: per-user logins".
//
// The API speaks no go-sdk type, nor do authn's and peruser's: a program
// that mounts a Gateway compiles the SDK through this package but never
// names it. audit's Log is the one exception, being a go-sdk middleware.
//
// Quick start:
//
//	cfg, err := config.Load("mcp.json", nil)
//	if err != nil { ... }
//	gw, err := gateway.Open(ctx, cfg, nil)
//	if err != nil { ... }
//	defer gw.Close()
//	mux := http.NewServeMux()
//	mux.Handle("/mcp", authn.Require(authn.SharedToken(os.Getenv("TOKEN")), nil)(gw.Handler()))
//	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
//	log.Fatal(srv.ListenAndServe())
package gateway
