package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/cmd/internal/cli"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/peruser"
	"github.com/toolsift/toolsift/internal/cachefile"
	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
	"go.opentelemetry.io/otel/trace"
)

// tokenEnv holds the bearer token of serve --listen.
const tokenEnv = "TOOLSIFT_SERVE_TOKEN"

const serveSynopsis = `toolsift serve --config FILE [flags]

Serves every MCP server of FILE as one MCP server, over stdio (the default, for
desktop clients) or streamable HTTP at http://ADDR/mcp (--listen ADDR). FILE is
any config toolsift reads: Claude Desktop's claude_desktop_config.json, Claude
Code's .mcp.json, Cursor's .cursor/mcp.json, VS Code's .vscode/mcp.json.

It lists search_tools (finds the tools a task needs, with their schemas fitted
to --budget tokens), call_tool (calls any tool by name) and the pinned tools: a
server's tools with "alwaysLoad": true in FILE, and --pin tools. Found tools join
the session's list (tools/list_changed), at most --max-tools in all, the least
recently used leaving first. Client limits: Cursor about 40 (80-100 in recent
versions), VS Code 128 per request, OpenAI 128.

Servers whose tools are in the cache start only when one of their tools is
called, and stop after --idle-timeout; the others connect while serve already
answers, each joining when it has listed its tools (logged "server ready"). --listen needs a bearer token ($` + tokenEnv + `
or --token-file), or per-user credentials (--tokens: toolsift token create; --oidc-issuer:
JWTs of your identity provider), unless ADDR is loopback-only (127.0.0.1, ::1,
localhost). --audit records every tool call in the --store (toolsift
audit prints them; --audit-retention 720h deletes the days older than 30, daily).
--per-user NAME reaches the url server NAME with each user's own OAuth login,
logged in at --public-url/login/NAME, sealed with the key of --login-key-file
($` + loginKeyEnv + `); see docs/serve.md, "Team gateway: per-user logins".
--metrics ADDR serves Prometheus metrics at http://ADDR/metrics, on a listener of
their own (docs/serve.md, "Metrics").
Traces go to an OTLP collector when the OTEL_* variables say so
(OTEL_EXPORTER_OTLP_ENDPOINT; docs/serve.md, "Traces").
Logs (one line per search and per call, never arguments) go to stderr.`

// serve runs toolsift serve.
func serve(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "serve", serveSynopsis)
	configFile := fs.String("config", "", "MCP servers config `file` (required)")
	listen := fs.String("listen", "", "serve streamable HTTP on `addr` (host:port) at /mcp instead of stdio")
	tokenFile := fs.String("token-file", "", "`file` holding the bearer token for --listen (default $"+tokenEnv+")")
	stateless := fs.Bool("stateless", false, "with --listen: no sessions for any client (2026-07-28 clients never get one); found tools are called by name or through call_tool")
	maxTools := fs.Int("max-tools", gateway.DefaultMaxTools, "most tools on a session's list, pinned and found")
	budget := fs.Int("budget", think.DefaultBudget, "most `tokens` of tool schemas in one search_tools answer")
	var pins []string
	listFlag(fs, &pins, "pin", "list this tool from the start (`name` as listed, server__tool, or a glob; repeatable, or comma-separated)")
	storeSpec := fs.String("store", "", "where tool lists, trust records, vectors, token costs, what search learned (and with --tokens, --audit, --per-user: tokens, audit records, logins) are kept: a `folder` (default the user cache folder's toolsift), or a postgres:// URL that replicas share")
	cacheDir := fs.String("cache-dir", "", "deprecated: --store")
	noCache := fs.Bool("no-cache", false, "keep nothing past this run: every server starts now")
	noLearn := fs.Bool("no-learn", false, "learn nothing from the calls routed: search_tools ranks as if each request were the first (by default a search followed by the same caller's call of a tool it found teaches that team's later searches; toolsift usage lists and forgets it)")
	learnScope := fs.String("learn-scope", "team", "who shares what search learns: `team` (the caller's first team), user (each user alone) or global (everyone; one user's calls count for another once two users stand behind a tool)")
	connectTimeout := fs.Duration("connect-timeout", 30*time.Second, "how long a server may take to start and list its tools (a server's own \"timeout\" wins)")
	connectWait := fs.Duration("connect-wait", toolsift.DefaultConnectWait, "how long a search_tools, or a call of a tool not listed yet, waits for the servers still connecting on a first start (0: never; the answer names those still connecting either way)")
	idle := fs.Duration("idle-timeout", 5*time.Minute, "stop a server not called for this long (negative: never)")
	sessionTimeout := fs.Duration("session-timeout", 30*time.Minute, "with --listen: close an HTTP session idle this long (0: never)")
	clientRate := fs.Int("client-requests-per-minute", gateway.DefaultClientRequestsPerMinute, "most sampling and elicitation requests one upstream server may send the clients a minute (negative: no cap)")
	maxResultBytes := fs.Int64("max-result-bytes", gateway.DefaultMaxResultBytes, "most `bytes` of upstream tool results held at once across calls; a result waits for room, one larger than this is refused")
	maxSessions := fs.Int("max-sessions", gateway.DefaultMaxSessions, "with --listen: most open HTTP sessions; past it the session idle longest is closed (or the new one refused when all are busy)")
	maxConns := fs.Int("max-conns", gateway.DefaultMaxConns, "with --listen: most open connections; past it a connection is answered 503")
	maxConnsPerHost := fs.Int("max-conns-per-host", 0, "with --listen: most open connections from one host (IP address; IPv6 by /64), past it 503; 0 means a quarter of --max-conns, at least 8 (behind a reverse proxy, every connection is the proxy's: set it to --max-conns)")
	var origins []string
	listFlag(fs, &origins, "allow-origin", "with --listen: also answer browser requests from this `origin` (scheme://host[:port], or * for any; repeatable); loopback origins and the listen address are always allowed")
	inputs := map[string]string{}
	fs.Func("input", "value of a config's ${input:`ID`}, as ID=VALUE (repeatable)", func(s string) error {
		id, value, ok := strings.Cut(s, "=")
		switch {
		case !ok:
			return errors.New("want ID=VALUE, without the value shown here")
		case id == "":
			return errors.New("want ID=VALUE, got no ID before =")
		}
		inputs[id] = value
		return nil
	})
	var ids identityFlags // --tokens, --oidc-*, --audit (token.go)
	ids.add(fs)
	auditRetention := fs.Duration("audit-retention", 0, "with --audit: delete the audit records of days over by this long ago (`duration`, at least 24h; 720h keeps 30 days), at start and then daily; 0 keeps everything")
	perUser := addPerUserFlags(fs)
	policyFile := fs.String("policy", "", "policy `file`: which servers and tools each user or team may see and call, and how fast (docs/serve.md, \"Team gateway: policy\")")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://`addr`/metrics (and /healthz, /readyz), unauthenticated, on a listener of their own (docs/serve.md, \"Metrics\")")
	metricsUsers := fs.Int("metrics-user-labels", 0, "label the request and call counters of --metrics with the caller's user, for the first `n` users (the others \"other\"); 0: no user labels (docs/serve.md, \"Metrics\")")
	logJSON := fs.Bool("log-json", false, "log JSON lines instead of text")
	logLevel := fs.String("log-level", "info", "least `level` logged: debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageError(fs, "unexpected argument %q (the config file goes after --config)", fs.Arg(0))
	case *configFile == "":
		return usageError(fs, "--config is required")
	case *maxTools < 3:
		return usageError(fs, "--max-tools %d: want at least 3 (search_tools, call_tool and one more)", *maxTools)
	case *connectTimeout <= 0:
		return usageError(fs, "--connect-timeout %v: want a positive duration", *connectTimeout)
	case *sessionTimeout < 0:
		return usageError(fs, "--session-timeout %v: want 0 (never) or a positive duration", *sessionTimeout)
	case *budget < 1:
		return usageError(fs, "--budget %d: want a positive number of tokens", *budget)
	case *listen == "" && (*tokenFile != "" || *stateless):
		return usageError(fs, "--token-file and --stateless need --listen")
	case *clientRate == 0:
		return usageError(fs, "--client-requests-per-minute 0: want a positive number (or negative for no cap)")
	case *maxResultBytes < 1:
		return usageError(fs, "--max-result-bytes %d: want a positive number of bytes", *maxResultBytes)
	case *maxSessions < 1:
		return usageError(fs, "--max-sessions %d: want at least 1", *maxSessions)
	case *maxConns < 2:
		return usageError(fs, "--max-conns %d: want at least 2 (a client's event stream and its requests)", *maxConns)
	case *maxConnsPerHost < 0 || *maxConnsPerHost == 1:
		return usageError(fs, "--max-conns-per-host %d: want 0 (a quarter of --max-conns) or at least 2 (a client's event stream and its requests)", *maxConnsPerHost)
	case !slices.Contains([]string{"team", "user", "global"}, *learnScope):
		return usageError(fs, "--learn-scope %q: want team, user or global", *learnScope)
	case *metricsAddr != "" && *metricsAddr == *listen && !strings.HasSuffix(*listen, ":0"):
		// (Port 0 twice is two ports the system picks.)
		return usageError(fs, "--metrics %s: the --listen address; give the metrics a listener of their own", *metricsAddr)
	case *metricsUsers < 0:
		return usageError(fs, "--metrics-user-labels %d: want 0 (no user labels) or more", *metricsUsers)
	case *metricsUsers > 0 && *metricsAddr == "":
		return usageError(fs, "--metrics-user-labels needs --metrics")
	case *auditRetention != 0 && !ids.audit:
		return usageError(fs, "--audit-retention needs --audit")
	case *auditRetention < 0:
		return usageError(fs, "--audit-retention %v: want 0 (keep everything) or a positive duration", *auditRetention)
	case *auditRetention > 0 && *auditRetention < audit.MinRetention:
		return usageError(fs, "--audit-retention %v: under one day: want %v or more (the last day's records are still being written)", *auditRetention, audit.MinRetention)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError(fs, "--log-level %q: want debug, info, warn or error", *logLevel)
	}
	if err := ids.check(e, *listen, *tokenFile); err != nil {
		return usageError(fs, "%v", err)
	}
	token := ""
	if *listen != "" {
		if _, _, err := net.SplitHostPort(*listen); err != nil {
			return usageError(fs, "--listen %q: want host:port (127.0.0.1:8080, :8080): %v", *listen, err)
		}
	}
	if *listen != "" && !ids.identities() {
		var err error
		if token, err = readToken(e, *tokenFile); err != nil {
			return err
		}
		if token == "" && !loopbackOnly(*listen) {
			return usageError(fs, "--listen %s accepts connections from other machines: set $%s or --token-file (or listen on 127.0.0.1)", *listen, tokenEnv)
		}
	}
	// Server text (tool names, errors, stderr) is escaped before it
	// reaches a terminal: see internal/termsafe.
	hopts := &slog.HandlerOptions{Level: level, ReplaceAttr: escapeAttr}
	var handler slog.Handler = slog.NewTextHandler(e.stderr, hopts)
	if *logJSON {
		handler = slog.NewJSONHandler(e.stderr, hopts)
	}
	log := slog.New(handler)

	st, err := openStore(ctx, *storeSpec, *cacheDir, *noCache, log)
	switch {
	case errors.Is(err, postgres.ErrUnavailable), errors.Is(err, postgres.ErrRefused):
		return err // the flag is right; the database is not there, or refuses its role
	case err != nil:
		return usageError(fs, "%v", err)
	case st != nil:
		defer st.Close() // after the gateway (deferred later, run first)
	}
	// Metrics and traces first: the store they instrument is every
	// user's of it (the Toolset, tokens, the audit log, per-user logins).
	var metrics http.Handler
	var gmetrics *gateway.Metrics
	if *metricsAddr != "" {
		if gmetrics, metrics, err = newMetrics(log, *metricsUsers); err != nil { // metrics.go
			return err
		}
	}
	tp, stopTraces, err := newTracing(ctx, e.getenv, log) // traces.go: the OTEL_* variables
	if err != nil {
		return err
	}
	var tracer trace.TracerProvider // nil, not a nil *sdktrace.TracerProvider, when off
	if tp != nil {
		tracer = tp
		defer func() { // after the gateway and the audit log (deferred later, run first): their last spans are flushed
			shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := stopTraces(shut); err != nil {
				log.Warn("traces: flush at shutdown", "error", err)
			}
		}()
		log.Info("traces on", "exporter", "otlp")
	}
	if gmetrics != nil || tracer != nil {
		if st == nil {
			if d, err := upstream.DefaultStore(); err == nil {
				st = d // the folder the Hub would open, so that it is instrumented too
			}
		}
		st = gateway.InstrumentStore(st, gmetrics, tracer)
	}
	idOpts, err := ids.options(ctx, st)
	if err != nil {
		return err
	}

	start := time.Now()
	cfg, err := config.Load(*configFile, &config.Options{Inputs: inputs})
	if err != nil {
		return err
	}
	for name, sc := range cfg.Servers {
		if isSelf(sc) && !sc.Disabled {
			// The client's own config file, with toolsift in it: serving
			// it would start toolsift serve again, and again.
			log.Warn("config", "warning", fmt.Sprintf("server %q is toolsift serve itself: skipped", name))
			sc.Disabled = true
			cfg.Servers[name] = sc
		}
	}
	// The policy is read at start only: a bad file fails the start,
	// naming file:line:col.
	var policy *config.Policy
	if *policyFile != "" {
		if policy, err = config.LoadPolicy(*policyFile); err != nil {
			return err
		}
	}
	// Servers that need a login get the logins toolbench login stored, or
	// fail at once, alone, naming that command: serve never waits on a
	// browser.
	var auth upstream.Authorizer
	if s := loginStore(e, *configFile, log); s != nil {
		auth = s
	}
	// Servers not in the cache connect after serve listens; each one's
	// first attempt over is signalled here (see logArrivals).
	arrived := make(chan struct{}, 1)
	wait := *connectWait
	if wait == 0 {
		wait = -1 // the Toolset's "never"; its 0 is the default
	}
	// The Toolset pins by the library's rule: the config's "alwaysLoad"
	// and "alwaysLoadTools", and --pin; a pin that matches nothing is
	// logged by it. The gateway wires the Hub's and the Toolset's hooks: a
	// change upstream reaches the clients' lists at once.
	gopts := &gateway.Options{
		Toolset: toolsift.Options{Pin: pins, Store: st, ConnectWait: wait, NoUsage: *noLearn},
		Hub: upstream.HubOptions{
			IdleTimeout: *idle, Timeout: *connectTimeout, Auth: auth,
			// Listen at once, with what the cache has: a first start of
			// a big catalog takes longer than clients wait for
			// initialize. Servers join as they list.
			Background: true,
			Progress: func(upstream.Progress) {
				select {
				case arrived <- struct{}{}:
				default:
				}
			},
		},
		Policy: policy,
		HTTP: gateway.HTTPOptions{
			Stateless:      *stateless,
			SessionTimeout: *sessionTimeout,
			MaxSessions:    *maxSessions,
			AllowedOrigins: origins,
		},
		Server: gateway.ServerInfo{Version: cli.Version()},
		Search: gateway.SearchOptions{
			MaxTools:   *maxTools,
			Budget:     *budget,
			LearnScope: map[string]gateway.LearnScope{"team": gateway.LearnByTeam, "user": gateway.LearnByUser, "global": gateway.LearnGlobal}[*learnScope],
		},
		Limits:    gateway.Limits{MaxResultBytes: *maxResultBytes, ClientRequestsPerMinute: *clientRate},
		Telemetry: gateway.Telemetry{Logger: log},
	}
	if idOpts.audit != nil {
		alog := &audit.Log{Store: idOpts.audit, Logger: log}
		gopts.Audit = alog
		defer flushAudit(log, alog) // after the gateway (deferred later, run first), before the store closes
	}
	// Per-user servers: each user's own OAuth login (peruser.go).
	puOpts, err := perUser.options(e, *listen, st, log)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	var logins *peruser.Logins
	var pender gateway.LoginPender // logins, when there are
	if puOpts != nil {
		if logins, err = peruser.New(ctx, cfg, puOpts); err != nil {
			return err
		}
		gopts.PerUser, pender = logins, logins
	}
	gopts.Telemetry.Metrics, gopts.Telemetry.Tracer = gmetrics, tracer
	gw, err := gateway.Open(ctx, cfg, gopts)
	if err != nil {
		return err
	}
	defer gw.Close()
	if metrics != nil {
		stop, err := serveMetrics(log, *metricsAddr, metrics, healthHandler(gw.Toolset(), pender))
		if err != nil {
			return fmt.Errorf("--metrics %s: %w", *metricsAddr, err)
		}
		defer stop()
	}
	if *auditRetention > 0 {
		stop := startAuditPrune(ctx, log, idOpts.audit, *auditRetention) // audit.go
		defer stop()                                                     // before the store closes
	}
	ts := gw.Toolset()
	// The config's warnings, then pins that match nothing.
	for _, w := range ts.Warnings() {
		log.Warn("config", "warning", w)
	}
	firstLook(ts)
	var ready []upstream.ServerStatus
	var connecting []string
	for _, st := range ts.Status() {
		switch st.State {
		case upstream.StateReady:
			ready = append(ready, st)
		case upstream.StateConnecting:
			connecting = append(connecting, st.Name)
		case upstream.StateLazy, upstream.StateDisabled:
		default:
			log.Warn("server not ready", "server", st.Name, "state", st.State, "error", st.Err)
		}
	}
	// A server ready before this first look (a fast one, or a busy
	// machine) is logged as those still connecting will be when they
	// arrive: every server that lists its tools says so once.
	for _, st := range ready {
		log.Info("server ready", "server", st.Name, "tools", st.Tools, "duration", st.ConnectTime, "connecting", len(connecting))
	}
	started := len(ready)
	for _, w := range gw.Warnings() {
		log.Warn("gateway", "warning", w) // pins that match nothing, the policy's warnings
	}
	if *policyFile != "" { // read again on SIGHUP
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-hup:
					reloadPolicy(log, gw, *policyFile)
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	log.Info("ready", "servers", len(cfg.Servers), "started", started, "connecting", len(connecting),
		"tools", len(ts.Tools()), "pinned", len(gw.Pinned()), "duration", time.Since(start))
	stopArrivals, settled := make(chan struct{}), make(chan struct{})
	defer close(stopArrivals)
	go func() {
		defer close(settled)
		logArrivals(log, ts, connecting, arrived, stopArrivals)
	}()

	if *listen == "" {
		err := gw.ServeStdio(ctx, e.stdin, e.stdout)
		if err == nil && ctx.Err() == nil {
			// The client went away: the servers still connecting finish
			// (within their timeouts) and are cached, so that
			// `toolsift serve --config FILE </dev/null` warms the cache.
			select {
			case <-settled:
			case <-ctx.Done():
			}
		}
		return err
	}
	// Every request is authenticated in front of the gateway (token.go).
	h, authenticated, stop := idOpts.authenticate(ctx, log, gw.Handler(), token)
	defer stop() // before the store closes
	var login http.Handler
	if logins != nil {
		login = logins.Handler()
	}
	return serveHTTP(ctx, e, log, h, login, healthHandler(ts, pender), *listen, *maxConns, *maxConnsPerHost, authenticated, *stateless)
}

// firstLook runs before serve's first look at its servers' states: a
// test's hook (a no-op in the command).
var firstLook = func(*toolsift.Toolset) {}

// auditFlushWait is how long serve, stopping, waits for the audit records
// kept in memory while its store could not take them.
const auditFlushWait = 10 * time.Second

// flushAudit writes the audit records l keeps in memory, waiting up to
// auditFlushWait; those still waiting then are lost, and logged.
func flushAudit(log *slog.Logger, l *audit.Log) {
	ctx, cancel := context.WithTimeout(context.Background(), auditFlushWait)
	defer cancel()
	if err := l.Flush(ctx); err != nil {
		log.Error("audit records lost at exit: the store did not take them", "error", err)
	}
}

// reloadPolicy reads the policy file again and enforces it (a caller's
// tools out of its new scope leave its lists); a file that no longer
// reads keeps the policy in force, with a warning naming file:line:col.
func reloadPolicy(log *slog.Logger, gw *gateway.Gateway, file string) {
	pol, err := config.LoadPolicy(file)
	var warnings []string
	if err == nil {
		warnings, err = gw.SetPolicy(pol)
	}
	if err != nil {
		log.Warn("policy not reloaded: the one in force stays", "error", err)
		return
	}
	for _, w := range warnings {
		log.Warn("policy", "warning", w)
	}
	log.Info("policy reloaded", "file", file, "rules", len(pol.Rules), "limits", countLimits(pol))
}

// countLimits counts the rate limits of pol's rules.
func countLimits(pol *config.Policy) int {
	n := 0
	for _, r := range pol.Rules {
		n += len(r.Limits)
	}
	if pol.Anonymous != nil {
		n += len(pol.Anonymous.Limits)
	}
	return n
}

// logArrivals logs each server of connecting when its first connection
// attempt is over (a signal on arrived): ready with its tools, which are
// in the index and on their way to the clients by then, or not ready and
// why. It returns when none is left, or stop is closed.
func logArrivals(log *slog.Logger, ts *toolsift.Toolset, connecting []string, arrived <-chan struct{}, stop <-chan struct{}) {
	for len(connecting) > 0 {
		select {
		case <-arrived:
		case <-stop:
			return
		}
		for _, st := range ts.Status() {
			if st.State == upstream.StateConnecting || !slices.Contains(connecting, st.Name) {
				continue
			}
			connecting = slices.DeleteFunc(connecting, func(n string) bool { return n == st.Name })
			if st.State == upstream.StateReady {
				log.Info("server ready", "server", st.Name, "tools", st.Tools, "duration", st.ConnectTime, "connecting", len(connecting))
			} else {
				log.Warn("server not ready", "server", st.Name, "state", st.State, "error", st.Err)
			}
		}
	}
}

// serveHTTP serves h at http://addr/mcp, health at /healthz and /readyz
// (unauthenticated: healthHandler), and login (when not nil: the
// per-user login pages) at the rest, until ctx ends, with at most
// maxConns connections open, and maxConnsPerHost from one host
// (gateway.LimitListener).
func serveHTTP(ctx context.Context, e *env, log *slog.Logger, h, login, health http.Handler, addr string, maxConns, maxConnsPerHost int, hasToken, stateless bool) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle("/healthz", health)
	mux.Handle("/readyz", health)
	if login != nil {
		mux.Handle("/", login)
	}
	// Headers must arrive within 10s and a body within
	// HTTPOptions.BodyTimeout (the handler's deadline); an idle keep-alive
	// connection is closed after 2 minutes. No ReadTimeout or WriteTimeout:
	// either would cut the long event streams (GET) of live sessions.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	ln = gateway.LimitListener(ln, maxConns, maxConnsPerHost)
	url := "http://" + ln.Addr().String() + "/mcp"
	log.Info("listening", "url", url, "token", hasToken, "stateless", stateless)
	if e.listening != nil {
		e.listening(ln.Addr().String())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	_ = srv.Close()
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// maxTokenFile bounds --token-file (docs/limits.md).
const maxTokenFile = 64 << 10

// readToken returns the bearer token from file, or else from the
// environment; empty when neither is set. A file that is named but empty
// is an error: the user meant to set a token.
func readToken(e *env, file string) (string, error) {
	if file != "" {
		// The cache's rules: a regular file (a FIFO would hang serve),
		// small (not /dev/zero), and on Unix not writable by group or
		// others (who could set the token) — refused, naming the file.
		b, err := cachefile.ReadFile(file, maxTokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("--token-file %s is empty", file)
		}
		return t, nil
	}
	return strings.TrimSpace(e.getenv(tokenEnv)), nil
}

// isSelf reports whether a server of the config is toolsift serve.
func isSelf(sc config.Server) bool {
	base := strings.TrimSuffix(filepath.Base(sc.Command), ".exe")
	if base == "go" && slices.Contains(sc.Args, "run") {
		base = "toolsift" // go run ./cmd/toolsift serve ...
		if !slices.ContainsFunc(sc.Args, func(a string) bool {
			return strings.HasSuffix(a, "cmd/toolsift") || strings.Contains(a, "cmd/toolsift@")
		}) {
			return false
		}
	}
	return base == "toolsift" && slices.Contains(sc.Args, "serve")
}

// loopbackOnly reports whether a listen address (host:port) accepts
// connections from this machine only: a loopback IP, or "localhost". An
// empty host listens on every interface.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isMemory reports whether st is a store.Memory, instrumented or not
// (gateway.InstrumentStore).
func isMemory(st store.Store) bool {
	if u, ok := st.(interface{ Unwrap() store.Store }); ok {
		st = u.Unwrap()
	}
	_, mem := st.(*store.Memory)
	return mem
}

// openStore opens the store --store names (the deprecated --cache-dir
// too), a Memory store with --no-cache, or nil (the default folder).
func openStore(ctx context.Context, spec, cacheDir string, off bool, log *slog.Logger) (store.Store, error) {
	switch {
	case cacheDir != "" && spec != "" && cacheDir != spec:
		return nil, fmt.Errorf("--cache-dir %s and --store %s: give --store only", cacheDir, spec)
	case cacheDir != "":
		spec = cacheDir
	}
	switch {
	case off && spec != "":
		return nil, fmt.Errorf("--no-cache and --store %s: give one", spec)
	case off:
		return store.NewMemory(), nil
	case spec == "":
		return nil, nil
	}
	return cli.OpenStore(ctx, spec, log)
}

// loginStore is the store of logins that toolbench login writes
// (oauth.DefaultStore, or $XDG_CONFIG_HOME/toolsift where that is set,
// as toolbench does), or nil when there is none to be had.
func loginStore(e *env, configFile string, log *slog.Logger) *oauth.Store {
	opts := &oauth.Options{LoginHint: "toolbench login --config " + configFile}
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
		st, err := store.NewDir(filepath.Join(d, "toolsift"))
		if err != nil {
			log.Warn("logins unavailable", "error", err)
			return nil
		}
		opts.Store = st
	}
	s, err := oauth.New(opts)
	if err != nil {
		log.Warn("logins unavailable", "error", err)
		return nil
	}
	return s
}

// escapeAttr escapes control characters in a log record's text values,
// which may come from servers.
func escapeAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		if s := termsafe.String(v.String()); s != v.String() {
			a.Value = slog.StringValue(s)
		}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			if s := termsafe.String(err.Error()); s != err.Error() {
				a.Value = slog.StringValue(s)
			}
		}
	}
	return a
}
