// Package mcp connects toolsift to many Model Context Protocol servers at
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
// with backoff, the Hub reports the difference as a tool.Change through
// HubOptions.OnChange, synchronously: wire an index with OnChange: ix.Apply
// and Connect returns with every connected server's tools applied.
// toolsift.Open does exactly that; use the Hub directly for a Hub without an
// index, or another consumer of changes. Connect waits for every server's
// first connection attempt; HubOptions.Progress hears how far it is
// (servers ready, failed, pending), for a progress display.
//
// Config files are read by package config, in the forms Claude Desktop,
// Claude Code, Cursor and VS Code write (docs/config.md). A stdio server
// gets a small default environment plus its env, never the caller's whole
// environment. Secrets in server URLs (userinfo, query values, fragment,
// secret-looking path segments) never reach an error, a ServerStatus or a
// log line, the SDK's included.
//
// One server's life (connect, supervise and restart, its tool list, its
// cache entry, lazy start and idle stop) is the methods of that server, in
// server.go and server_tools.go; the Hub owns the set of servers, routing
// and options.
//
// Quick start:
//
//	cfg, err := config.Load("mcp.json", nil)
//	if err != nil { ... }
//	hub, err := mcp.NewHub(cfg, &mcp.HubOptions{OnChange: ix.Apply})
//	if err != nil { ... }
//	defer hub.Close()
//	if err := hub.Connect(ctx); err != nil { ... }
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
// one JSON file per server in os.UserCacheDir()/toolsift/catalog (on Linux
// ~/.cache/toolsift/catalog; HubOptions.CacheDir replaces
// os.UserCacheDir()/toolsift), named after the server and a fingerprint of
// how it is launched: command, args, resolved cwd, url, type, protocol
// version, allowedTools and disabledTools, and a SHA-256 hash of env and
// headers. The file holds the format version, the server's name, the
// fingerprint, when it was written, what the server said it is and which
// protocol revision it spoke, and its tools (qualified names, descriptions,
// schemas, content hashes). It holds no env or header value, argument or
// URL: those only enter the fingerprint, itself a hash. Files are 0600 in a
// 0700 folder, written to a temporary file and renamed, so Hubs in several
// processes can share the folder; an entry that is unreadable, of another
// format version or does not match its server is ignored with a warning
// and rewritten. Servers with a Dial (LocalServer) are not cached:
// they are cheap to start and cannot be told apart across runs.
//
// In StartLazy mode (the default), Connect starts only the servers that
// have no cache entry, or whose fingerprint changed. The others are
// StateLazy: their cached tools are listed by Tools, applied through
// OnChange before Connect returns, and routed by Call, but no process runs.
// The first Call of one of its tools starts the server (one start for
// concurrent callers), applies what changed since the cache was written
// (Added, Changed, Removed through OnChange), rewrites the entry and then
// makes the call. A call of a tool the server no longer lists fails with
// ErrUnknownTool; a server that fails to start fails the call with
// ErrServerUnavailable, its error and the tail of its stderr, and its tools
// are removed. A server not called for HubOptions.IdleTimeout (5 minutes)
// is stopped and becomes lazy again, keeping its tools. Refresh starts lazy
// servers. ServerStatus tells lazy, connecting, ready and failed servers
// apart, and FromCache and CachedAt say where the tools came from.
//
// StartEager starts every server at Connect and never stops idle ones, as
// before the cache; it still writes the cache. HubOptions.NoCache turns
// the cache off: nothing is read or written, and every server starts at
// Connect (in StartLazy mode idle servers are still stopped). Entries of launches no longer configured are not removed;
// deleting the folder is always safe.
package mcp
