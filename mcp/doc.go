// Package mcp connects toolsift to many Model Context Protocol servers at
// once and routes tool calls to them.
//
// It owns the mcpServers config file (the format Claude Desktop, Cursor and
// VS Code use, plus allowedTools, disabledTools, timeout, disabled and
// protocolVersion per server), the connections (stdio, streamable HTTP, SSE,
// and in-process Go functions through LocalServer), namespacing, live
// updates and restarts, and rendering results for a model. It is built on
// github.com/modelcontextprotocol/go-sdk; its API speaks tool.Tool.
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
// index, or another consumer of changes.
//
// Config files are read in the forms Claude Desktop, Claude Code, Cursor and
// VS Code write (docs/config.md). A stdio server gets a small default
// environment plus its env, never the caller's whole environment.
//
// Quick start:
//
//	cfg, err := mcp.LoadConfig("mcp.json")
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
package mcp
