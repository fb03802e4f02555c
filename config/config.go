package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Config is a set of MCP servers, as read from a config file by [Load] or
// built in code. docs/config.md describes the files it reads.
type Config struct {
	// Servers maps a server's name to how to reach it.
	Servers map[string]Server

	// Dir is the folder that relative working directories resolve against,
	// and where a stdio server without Cwd starts. Load sets it to the
	// config file's folder; empty means the process's working directory.
	Dir string

	// Warnings lists what Load ignored (unknown fields, undefined
	// ${VAR}s), each as "file:line:col: message" naming the server and
	// field. They never hold a variable's value.
	Warnings []string
}

// Server is one entry of the mcpServers object: plain data saying how to
// reach one server. Exactly one of Command, URL or Dial is set.
type Server struct {
	// Command, Args, Env and Cwd start a stdio server. A relative Cwd
	// resolves against Config.Dir. The server's environment is Env on top
	// of a small default set of the Hub's variables (HOME, PATH, ...) and
	// those InheritEnv names; nothing else of the Hub's environment reaches
	// it. In files, Env also holds what "envFile" sets ("env" wins).
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string

	// InheritEnv lists more of the Hub's environment variables to pass to a
	// stdio server: exact names or path.Match globs ("AWS_*"); "*" passes
	// everything. In files it is "inheritEnv": a list, or true for ["*"].
	InheritEnv []string

	// URL and Headers reach a remote server. Type selects the transport:
	// "http" (streamable HTTP), "sse" (the 2024-11-05 HTTP+SSE transport),
	// or empty: streamable HTTP, falling back to SSE when that fails.
	URL     string
	Headers map[string]string
	Type    string

	// OAuth, when set, is how a login identifies this client to the
	// server's authorization server (see OAuth); nil means a client
	// registered at login.
	OAuth *OAuth

	// Dial, when set, opens a fresh connection for each connection attempt
	// instead of Command or URL: a stream of newline-delimited JSON-RPC
	// messages, as a stdio server speaks on its stdin and stdout. It is for
	// servers in this process (upstream.LocalServer) and tests; it is not read
	// from files. Closing the stream ends the connection.
	Dial func(ctx context.Context) (io.ReadWriteCloser, error)

	// AllowedTools, when not empty, keeps only the tools whose original name
	// matches one of its entries; DisabledTools drops the tools that match
	// one of its entries. Entries are exact names or path.Match globs
	// ("get_*").
	AllowedTools  []string
	DisabledTools []string

	// Timeout bounds connecting (start, initialize, first tools/list) and,
	// when set, each tool call. Zero means the Hub's default for connecting
	// (upstream.HubOptions.Timeout) and no limit but the caller's ctx for calls.
	// In files it is a number of seconds or a Go duration string ("45s").
	Timeout time.Duration

	// Disabled servers are not started.
	Disabled bool

	// AlwaysLoad ("alwaysLoad" in files, Claude Code's word) asks that the
	// server's tools are always offered rather than found by search;
	// AlwaysLoadTools ("alwaysLoadTools") asks it for some of them, by the
	// names the server lists them under. The Hub does not read them; the
	// Toolset pins these tools (toolsift.Options.Pin has the rule), and
	// toolsift serve lists them from the start.
	AlwaysLoad      bool
	AlwaysLoadTools []string

	// ProtocolVersion is the MCP revision sent in initialize (e.g.
	// "2025-06-18"), or "latest" for the SDK's newest, probed with
	// server/discover; empty means the Hub's (upstream.HubOptions.ProtocolVersion).
	ProtocolVersion string

	// Err, when not nil, says why the server cannot be used although the
	// file is valid: an ${input:ID} without a value, an unreadable envFile.
	// The server must not be started; the other servers are fine. Err
	// wraps [ErrInvalid] and never holds a secret. Disabled wins: a disabled
	// server is not started and not a failure, Err or not.
	Err error
}

// String describes sc without anything that may be secret: it shows the
// command, the URL's scheme and host, and the names of the environment
// variables and headers, never args, values or the rest of the URL.
func (sc Server) String() string {
	var b strings.Builder
	switch {
	case sc.Dial != nil:
		b.WriteString("in-process")
	case sc.Command != "":
		fmt.Fprintf(&b, "stdio %q", sc.Command)
		switch len(sc.Args) {
		case 0:
		case 1:
			b.WriteString(" with 1 arg")
		default:
			fmt.Fprintf(&b, " with %d args", len(sc.Args))
		}
		if len(sc.Env) > 0 {
			fmt.Fprintf(&b, ", env %s", strings.Join(slices.Sorted(maps.Keys(sc.Env)), " "))
		}
	case sc.URL != "":
		typ := sc.Type
		if typ == "" {
			typ = "http or sse"
		}
		host := "?"
		if u, err := url.Parse(sc.URL); err == nil {
			host = u.Scheme + "://" + u.Host
		}
		fmt.Fprintf(&b, "%s %s", typ, host)
		if len(sc.Headers) > 0 {
			fmt.Fprintf(&b, ", headers %s", strings.Join(slices.Sorted(maps.Keys(sc.Headers)), " "))
		}
	default:
		b.WriteString("no transport")
	}
	if sc.Disabled {
		b.WriteString(", disabled")
	}
	if sc.Err != nil {
		fmt.Fprintf(&b, ", unusable: %v", sc.Err)
	}
	return b.String()
}

// Options are the caller's part of reading a config file. The zero value,
// or nil, is fine.
type Options struct {
	// Inputs holds the values of VS Code's ${input:ID} variables, by ID:
	// what the editor would prompt for. A value here beats the input's
	// "default". A server that needs an input with neither gets
	// Server.Err, an [InputError] naming the input; the others load. Values are
	// treated as secrets: no error, warning or String shows them.
	Inputs map[string]string

	// WorkspaceFolder is what ${workspaceFolder} stands for. Empty means the
	// config file's folder, or its parent when that folder is .vscode or
	// .cursor.
	WorkspaceFolder string
}

// ErrInvalid is wrapped by every error about an invalid configuration: a
// file that cannot be read as one, a server that is incomplete or
// contradictory, and Server.Err.
var ErrInvalid = errors.New("config: invalid")

// An InputError is the Server.Err of a server whose config uses an
// ${input:ID} that has no value: none in Options.Inputs and no default in
// "inputs". It wraps [ErrInvalid]; ID says which value to give (a CLI can
// ask for it).
type InputError struct {
	ID  string
	msg string
}

func (e *InputError) Error() string { return e.msg }

// Unwrap returns ErrInvalid.
func (e *InputError) Unwrap() error { return ErrInvalid }

// Load reads a config file of MCP servers as Claude Desktop, Claude Code
// (.mcp.json), Cursor and VS Code (mcp.json, JSONC with "servers", "inputs"
// and "envFile") write them; docs/config.md has every accepted form. opts
// may be nil. Variables (${VAR}, ${VAR:-default}, ${env:NAME}, ${input:ID},
// ${workspaceFolder}, ${userHome}) expand in command, args, env, cwd, url,
// headers and envFile. Unknown fields and undefined variables are ignored
// with a warning in Config.Warnings; the warning about an unknown field
// names the known field it is probably a misspelling of (did you mean
// "command"?). An invalid file fails with an error wrapping
// [ErrInvalid] that names file:line:col, the server and the field; a
// server refused for a missing field also names its unknown fields.
// A server that is valid but cannot be used (an input without a value, an
// unreadable envFile) gets Server.Err.
func Load(file string, opts *Options) (*Config, error) {
	if opts == nil {
		opts = &Options{}
	}
	data, err := readFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, file, err)
	}
	ws := opts.WorkspaceFolder
	if ws == "" {
		ws = dir
		if b := filepath.Base(dir); b == ".vscode" || b == ".cursor" {
			ws = filepath.Dir(dir)
		}
	}
	p := &parser{
		file:      file,
		dir:       dir,
		workspace: ws,
		inputVals: opts.Inputs,
		lookup:    os.LookupEnv,
		readFile:  readFile,
	}
	cfg, err := p.parse(data)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	return cfg, nil
}

// Validate reports the first problem of a config built in code (a loaded
// one has none), naming the server and field: a server with an empty name,
// none or more than one of Command, URL and Dial, a field that needs
// another, a URL that is not http(s), a bad pattern, a negative timeout or
// a malformed protocol version. The error wraps [ErrInvalid] and holds no
// secret of a URL. A server's Err is not a problem of the config.
func (c *Config) Validate() error {
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		if name == "" {
			return fmt.Errorf("%w: server with an empty name", ErrInvalid)
		}
		if err := c.Servers[name].validate(name); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	return nil
}

// protocolVersionRE matches an MCP revision.
var protocolVersionRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// validate reports the first problem with sc, naming the server and field.
func (sc Server) validate(name string) error {
	if sc.Err != nil {
		return nil // reported as the server's failure, not the config's
	}
	n := 0
	for _, set := range []bool{sc.Command != "", sc.URL != "", sc.Dial != nil} {
		if set {
			n++
		}
	}
	switch {
	case sc.Disabled && n <= 1:
		// A disabled server is never started; don't insist on the rest.
	case n == 0:
		return fmt.Errorf(`server %q: needs "command" or "url"`, name)
	case n > 1:
		return fmt.Errorf(`server %q: has more than one of "command", "url" and a Dial`, name)
	}
	if sc.URL != "" {
		u, err := url.Parse(sc.URL)
		if err != nil {
			// The URL may hold a credential: give the reason, not the URL.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return fmt.Errorf("server %q: field \"url\": %w", name, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("server %q: field \"url\": scheme %q is not http or https", name, u.Scheme)
		}
	}
	if sc.Command == "" && (len(sc.Args) > 0 || len(sc.Env) > 0 || sc.Cwd != "") && !sc.Disabled {
		return fmt.Errorf(`server %q: "args", "env" and "cwd" need "command"`, name)
	}
	if sc.URL == "" && len(sc.Headers) > 0 && !sc.Disabled {
		return fmt.Errorf(`server %q: "headers" needs "url"`, name)
	}
	if sc.URL == "" && sc.OAuth != nil && !sc.Disabled {
		return fmt.Errorf(`server %q: "oauth" needs "url"`, name)
	}
	if sc.Type != "" && sc.URL == "" && !sc.Disabled {
		return fmt.Errorf(`server %q: field "type": %q needs "url"`, name, sc.Type)
	}
	switch sc.Type {
	case "", "http", "sse":
	default:
		return fmt.Errorf(`server %q: field "type": unknown transport %q`, name, sc.Type)
	}
	for _, list := range []struct {
		field    string
		patterns []string
	}{{"allowedTools", sc.AllowedTools}, {"disabledTools", sc.DisabledTools}, {"inheritEnv", sc.InheritEnv}} {
		for _, p := range list.patterns {
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("server %q: field %q: bad pattern %q: %w", name, list.field, p, err)
			}
		}
	}
	if sc.Timeout < 0 {
		return fmt.Errorf(`server %q: field "timeout": must not be negative`, name)
	}
	if sc.ProtocolVersion != "" && sc.ProtocolVersion != "latest" && !protocolVersionRE.MatchString(sc.ProtocolVersion) {
		return fmt.Errorf(`server %q: field "protocolVersion": %q is not a YYYY-MM-DD revision`, name, sc.ProtocolVersion)
	}
	return nil
}
