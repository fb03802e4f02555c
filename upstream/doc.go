// Package upstream connects toolsift to many Model Context Protocol servers at
// once and routes tool calls to them.
//
// It owns the connections to the servers a config.Config lists (stdio,
// streamable HTTP, SSE, and in-process Go functions through LocalServer),
// namespacing, allowedTools and disabledTools, live updates and restarts,
// the cache of tool lists and lazy start, and rendering results for a
// model. It is built on github.com/modelcontextprotocol/go-sdk; its API
// speaks tool.Tool and config.Server, never an SDK type.
//
// A Hub gives every tool a qualified name, "server__tool", that is unique
// across servers and a valid OpenAI function name (see QualifiedName). One
// broken server never takes the others down: Status tells which server
// failed, why, and the tail of its stderr. When a server sends
// notifications/tools/list_changed, or its session ends and it is restarted
// with backoff, the Hub reports the difference as a tool.Change to the
// change sink given to Connect, synchronously: wire an index with
// hub.Connect(ctx, ix.Apply) and Connect returns with every connected
// server's tools applied. toolsift.Open does exactly that (and
// toolsift.OpenHub over a Hub of yours); use the Hub directly for a Hub
// without an index, or another consumer of changes. Connect waits for every server's
// first connection attempt; HubOptions.Progress hears how far it is
// (servers ready, failed, pending), for a progress display. With
// HubOptions.Background it waits only for the servers listed from the
// cache, and the others join (through the sink) as each lists its tools:
// a proxy answers at once with what it has.
//
// Config files are read by package config, in the forms Claude Desktop,
// Claude Code, Cursor and VS Code write (docs/config.md). A stdio server
// gets a small default environment plus its env, never the caller's whole
// environment. Secrets in server URLs (userinfo, query values, fragment,
// secret-looking path segments) never reach an error, a ServerStatus or a
// log line, the SDK's included.
//
// Hostile servers and files: a url server's headers and tokens go to its
// origin only (a redirect or SSE endpoint elsewhere is refused:
// ErrForeignOrigin); response bodies and events are bounded
// (HubOptions.MaxMessageBytes, ErrTooLarge), as are tool lists
// (MaxTools, MaxToolPages, MaxDescriptionBytes, MaxSchemaBytes), and a
// tool nested deeper than MaxSchemaDepth is cut out of its tools/list
// answer before the SDK decodes it (any other message deeper than the
// SDK's 1,000 levels fails the request it answers, naming the server); an
// HTTP error says its status, method and URL; cache files are read only
// when regular, within a size limit and not writable by other users; a
// tool that changed since it was first seen is reported
// (ServerStatus.Changed) and loses its readOnlyHint until Hub.Trust
// accepts it (ReloadTrust picks up an acceptance made by another process).
// Every limit, its default and its error: docs/limits.md.
//
// A Hub is what a program that lists and calls tools needs; what only a
// proxy needs besides is the Hub's Passthrough (see "Passthrough" below).
//
// Quick start:
//
//	cfg, err := config.Load("mcp.json", nil)
//	if err != nil { ... }
//	hub, err := upstream.NewHub(cfg, nil)
//	if err != nil { ... }
//	defer hub.Close()
//	if err := hub.Connect(ctx, ix.Apply); err != nil { ... } // ix: a toolindex.Index
//	for _, st := range hub.Status() {
//		fmt.Println(st.Name, st.State, st.Tools, st.Err)
//	}
//	res, err := hub.Call(ctx, "filesystem__read_file", json.RawMessage(`{"path":"notes.txt"}`))
//	// err: the call could not be made; res.IsError: the tool failed.
//	fmt.Println(res.Content)
//
// Servers without a cwd start in the config file's folder, so
// "args": ["node_modules/pkg/dist/index.js"] works wherever the program runs.
//
// # The tool cache and lazy start
//
// Starting dozens of servers costs far more than the one call a task may
// need: 73 Node servers take 21–32 s of CPU-bound start-up and 6.7 GB on two
// cores. A server's tool list rarely changes between runs, so a Hub defers
// servers, not schemas.
//
// After a server lists its tools, the Hub writes the list to its cache:
// one JSON value per server in HubOptions.Store, under
// catalog/SERVER-FINGERPRINT.json (by default the store.Dir of
// os.UserCacheDir()/toolsift, where the key is a file: on Linux
// ~/.cache/toolsift/catalog/…), named after the server and a fingerprint of
// how it is launched: command, args, resolved cwd, url, type, protocol
// version, allowedTools and disabledTools, and a SHA-256 hash of env and
// headers. The file holds the format version, the server's name, the
// fingerprint, when it was written, what the server said it is and which
// protocol revision it spoke, and its tools (qualified names, descriptions,
// schemas, content hashes). It holds no env or header value, argument or
// URL: those only enter the fingerprint, itself a hash. A store.Dir writes
// files 0600 in a 0700 folder, to a temporary file then renamed, so Hubs
// in several processes can share the folder; an entry that is unreadable,
// over 64 MiB, of another format version or does not match its server is
// ignored with a warning and rewritten, and one the store fails to write
// is a warning: the cache only saves time. Servers with a Dial (LocalServer) are not cached:
// they are cheap to start and cannot be told apart across runs.
//
// In StartLazy mode (the default), Connect starts only the servers that
// have no cache entry, or whose fingerprint changed. The others are
// StateLazy: their cached tools are listed by Tools, applied through
// the sink before Connect returns, and routed by Call, but no process runs.
// The first Call of one of its tools starts the server (one start for
// concurrent callers), applies what changed since the cache was written
// (Added, Changed, Removed, to the sink), rewrites the entry and then
// makes the call. A call of a tool the server no longer lists fails with
// tool.ErrUnknown; a server that fails to start fails the call with
// tool.ErrUnavailable, its error and the tail of its stderr, and its tools
// are removed. A server not called for HubOptions.IdleTimeout (5 minutes)
// is stopped and becomes lazy again, keeping its tools. Refresh starts lazy
// servers. ServerStatus tells lazy, connecting, ready and failed servers
// apart, and FromCache and CachedAt say where the tools came from. A
// server of MCP 2026-07-28 may say how long its tool list stays fresh
// (ttlMs); Freshen lists again the ready servers whose lists have outlived
// it.
//
// StartEager starts every server at Connect and never stops idle ones, as
// before the cache; it still writes the cache. A HubOptions.Store of
// store.NewMemory() keeps nothing past the process: every server starts at
// Connect (in StartLazy mode idle servers are still stopped). Entries of
// launches no longer configured are not removed; deleting the folder is
// always safe.
//
// # Passthrough: what a proxy forwards
//
// A proxy that puts many servers behind one needs more of them than their
// tools, and must not lose what they send. Hub.Call gives it each call's
// raw result, progress, log messages and cancellation, asked for through
// the call's ctx (WithProgress, WithLog, WithInputRound), so that they
// pass unchanged through code between the proxy and the Hub. Everything
// else is the Hub's Passthrough (Hub.Passthrough, one per Hub): the
// servers' resources, resource templates and prompts, listed and cached
// with their tools, reads, prompts got, completions and resource
// subscriptions. The options only a proxy sets (ClientRequests,
// OnResourceUpdated, ServerLogLevel, OnListChange) are HubOptions, the
// last group of them: a server must know them when it connects. Nothing
// of the SDK appears in this API; where faithful forwarding needs it, the
// MCP JSON does, as the SDK decoded it (every field MCP defines; fields it
// does not know are dropped).
//
// A caller's scope, the servers it may reach, travels one way: in ctx
// (WithServerScope). Hub.Call and every Passthrough method, its lists
// included, treat a server out of scope as absent.
//
// Tools and results. tool.Tool carries the server's outputSchema
// (OutputSchema) and its annotations with their title; a new output schema
// is reported as a changed tool, with the same content hash (the hash keys
// what is derived from what the model is sent). tool.Result.Raw is the
// CallToolResult as the server sent it: content blocks with their
// annotations and data (images, audio, resource links, embedded resources),
// structuredContent, _meta, isError. A server's JSON-RPC error to a call
// is an isError result in Raw too; transport failures stay errors naming
// the server.
//
// Progress, logs and cancellation. A ctx from WithProgress makes Call (and
// Passthrough.ReadResource, GetPrompt) send a progress token of the Hub's
// own and hand the server's notifications/progress for it to a callback,
// in order, all of those sent before the result before the call returns,
// never after. A
// ctx from WithLog does the same with the server's log messages
// (notifications/message) while the call is the only one in flight to that
// server; HubOptions.ServerLogLevel asks servers that declare logging for
// them. Ending a call's ctx ends the call and sends notifications/cancelled
// to the server (the SDK does, without waiting).
//
// Resources and prompts. After a server lists its tools, the Hub lists its
// resources, resource templates and prompts (when it declares them), again
// on notifications/resources/list_changed and prompts/list_changed, and
// keeps them in the cache entry, so a lazy server's are listed before it
// starts. Prompts and resource names are qualified like tools
// (QualifiedName); resource URIs are kept as the server gave them, so
// clients can show them, file:// URIs stay usable and links in results keep
// pointing where they did, as long as one server claims them. A URI never
// routes to a server that did not list, link or template it, nor to a
// guess between two: a URI several servers list is listed by each under a
// namespaced URI, toolsift:SERVER/URI (templates listed alike too); a
// link or embedded resource whose URI another server claims reaches the
// caller under its server's namespaced URI; a bare URI that several
// servers could answer is refused with ErrAmbiguousResource naming them.
// Under a scope all of this holds among the scope's servers: a URI one of
// them lists is listed and read under its plain URI, whatever servers out
// of scope list. GetPrompt routes by qualified name. Complete asks the
// server that offers a prompt (by qualified name) or a resource template
// for completions of an argument. HubOptions.OnListChange hears when a
// server's lists changed, and when a server said its tools changed
// (ListChange.Tools: listed again, changed or not, ToolsDiffered saying
// which; a proxy passes the word on to its clients when the list is the
// same, and announces a difference once). Subscribe and Unsubscribe forward resource
// subscriptions to the server of a URI (the same routing as ReadResource),
// counted so that a proxy's clients share one upstream subscription (one
// per server: callers of different scopes may subscribe to a URI at two
// servers that both list it), and HubOptions.OnResourceUpdated hears the
// servers' notifications/resources/updated, each with its server's name.
//
// Requests from servers. Servers may ask their client for sampling,
// elicitation and roots. HubOptions.ClientRequests answers them: the Hub
// declares exactly the capabilities it offers (none by default, not even
// roots, which would let servers such as server-filesystem replace their
// configured folders), passes each request's params as JSON and sends its
// result back as it is; requests it does not offer are declined with a
// JSON-RPC error that says so and names the server. Such a request usually
// belongs to a call in flight, and a proxy must send it to the client that
// made that call: see ClientRequests for how the Hub finds the call (exact
// for the multi round-trip results of protocol 2026-07-28, the only call in
// flight to that server otherwise) and hands the handler a ctx with that
// call's values. Roots asked inside a multi round-trip result are answered
// from the Hub's (empty) root list, and roots list changes are not sent
// upstream. A caller that makes the multi round-trip rounds itself (a
// proxy whose client speaks 2026-07-28) marks its ctx with WithInputRound:
// the server's input-required result comes back as it is, and the
// caller's retry, with its client's capabilities, goes to the server as it
// is.
package upstream
