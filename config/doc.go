// Package config reads the files that list MCP servers, in the forms Claude
// Desktop, Claude Code (.mcp.json), Cursor and VS Code (mcp.json) write
// them, plus a few toolsift fields (allowedTools, disabledTools, inheritEnv,
// timeout, disabled, protocolVersion). docs/config.md lists every accepted
// form.
//
// [Load] is the one entry point: JSON or JSONC (comments, trailing
// commas), "mcpServers" or "servers", ${VAR}, ${VAR:-default},
// ${env:NAME}, ${userHome}, ${workspaceFolder}, VS Code's ${input:ID} (the
// caller gives the values in [Options]; nothing prompts) and "envFile"
// dotenv files. An invalid file is an error wrapping [ErrInvalid] that
// names file:line:col, the server and the field; what is ignored is a
// warning in [Config].Warnings; a server that is valid but cannot be used
// (an input without a value) gets [Server].Err, and the others load.
// Values that come from variables or inputs never appear in an error, a
// warning or [Server.String].
//
// A [Server] says how to start or reach one server: a command, a URL, or a
// Dial function that opens a JSON-RPC stream (for servers in this process;
// never read from files). Package upstream connects to them (upstream.NewHub takes a
// *Config); upstream.LocalServer makes a Server whose Dial serves Go functions.
// This package imports only the standard library: reading a file compiles
// no MCP SDK.
//
// Quick start:
//
//	cfg, err := config.Load(".vscode/mcp.json", &config.Options{
//		Inputs: map[string]string{"github-token": os.Getenv("GITHUB_TOKEN")},
//	})
//	if err != nil { ... } // errors.Is(err, config.ErrInvalid)
//	for _, w := range cfg.Warnings {
//		log.Print(w)
//	}
//	hub, err := upstream.NewHub(cfg, nil)
package config
