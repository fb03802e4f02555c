package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config is a set of MCP servers, as read from an mcpServers file by
// LoadConfig or built in code.
type Config struct {
	// Servers maps a server's name to how to reach it.
	Servers map[string]ServerConfig

	// Dir is the folder that relative working directories resolve against,
	// and where a stdio server without Cwd starts. LoadConfig sets it to the
	// config file's folder; empty means the process's working directory.
	Dir string

	// Warnings lists what LoadConfig ignored (unknown fields, undefined
	// ${VAR}s), each naming the server and field.
	Warnings []string
}

// ServerConfig is one entry of the mcpServers object. Exactly one of
// Command, URL or Transport is set.
type ServerConfig struct {
	// Command, Args, Env and Cwd start a stdio server. Env is added to the
	// Hub's own environment. A relative Cwd resolves against Config.Dir.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string

	// URL and Headers reach a remote server. Type selects the transport:
	// "http" (streamable HTTP), "sse" (the 2024-11-05 HTTP+SSE transport),
	// or empty: streamable HTTP, falling back to SSE when that fails.
	URL     string
	Headers map[string]string
	Type    string

	// Transport, when set, makes a fresh transport for each connection
	// attempt instead of Command or URL: for in-process servers (see
	// LocalServer) and tests. It is not read from files.
	Transport func(ctx context.Context) (sdk.Transport, error)

	// AllowedTools, when not empty, keeps only the tools whose original name
	// matches one of its entries; DisabledTools drops the tools that match
	// one of its entries. Entries are exact names or path.Match globs
	// ("get_*").
	AllowedTools  []string
	DisabledTools []string

	// Timeout bounds connecting (start, initialize, first tools/list) and,
	// when set, each tool call. Zero means HubOptions.Timeout for connecting
	// and no limit but the caller's ctx for calls. In files it is a number of
	// seconds or a Go duration string ("45s").
	Timeout time.Duration

	// Disabled servers are not started.
	Disabled bool

	// ProtocolVersion is the MCP revision sent in initialize (e.g.
	// "2025-06-18"), or "latest" for the SDK's newest, probed with
	// server/discover; empty means HubOptions.ProtocolVersion.
	ProtocolVersion string
}

// ErrConfig is wrapped by every error about an invalid configuration.
var ErrConfig = errors.New("mcp: invalid config")

// LoadConfig reads an mcpServers config file, as used by Claude Desktop,
// Cursor and VS Code ("servers" is accepted as VS Code's spelling). ${VAR}
// in env, headers and url expand from the environment. Unknown fields are
// ignored with a warning in Config.Warnings; invalid entries fail with an
// error wrapping ErrConfig that names the server and field.
func LoadConfig(file string) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, file, err)
	}
	cfg, err := parseConfig(data, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, file, err)
	}
	cfg.Dir = dir
	return cfg, nil
}

// fileServer is one server as written in a file; fields are decoded one by
// one so that unknown ones can be reported.
var knownServerFields = []string{
	"command", "args", "env", "cwd", "url", "headers", "type", "transport",
	"allowedTools", "disabledTools", "timeout", "disabled", "protocolVersion",
}

// Fields other clients write that we understand as no-ops: not worth a
// warning.
var quietServerFields = []string{"autoApprove", "alwaysAllow", "description", "envFile"}

func parseConfig(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	cfg := &Config{Servers: map[string]ServerConfig{}}
	raw, ok := top["mcpServers"]
	key := "mcpServers"
	if !ok {
		raw, ok = top["servers"]
		key = "servers"
	}
	if !ok {
		return nil, errors.New(`no "mcpServers" object`)
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != key && k != "inputs" && k != "$schema" {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("unknown top-level field %q ignored", k))
		}
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &servers); err != nil {
		return nil, fmt.Errorf("%q: not an object: %w", key, err)
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		sc, warns, err := parseServer(name, servers[name], lookup)
		if err != nil {
			return nil, err
		}
		cfg.Warnings = append(cfg.Warnings, warns...)
		cfg.Servers[name] = sc
	}
	return cfg, nil
}

func parseServer(name string, raw json.RawMessage, lookup func(string) (string, bool)) (ServerConfig, []string, error) {
	var sc ServerConfig
	var warns []string
	if name == "" {
		return sc, nil, errors.New("server with an empty name")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return sc, nil, fmt.Errorf("server %q: not an object: %w", name, err)
	}
	field := func(f string, v any) error {
		r, ok := fields[f]
		if !ok || bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
			return nil
		}
		if err := json.Unmarshal(r, v); err != nil {
			return fmt.Errorf("server %q: field %q: %w", name, f, err)
		}
		return nil
	}
	var typ, transport, timeout json.RawMessage
	for _, f := range []struct {
		name string
		v    any
	}{
		{"command", &sc.Command}, {"args", &sc.Args}, {"env", &sc.Env}, {"cwd", &sc.Cwd},
		{"url", &sc.URL}, {"headers", &sc.Headers}, {"type", &typ}, {"transport", &transport},
		{"allowedTools", &sc.AllowedTools}, {"disabledTools", &sc.DisabledTools},
		{"timeout", &timeout}, {"disabled", &sc.Disabled}, {"protocolVersion", &sc.ProtocolVersion},
	} {
		if err := field(f.name, f.v); err != nil {
			return sc, nil, err
		}
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(knownServerFields, f) && !slices.Contains(quietServerFields, f) {
			warns = append(warns, fmt.Sprintf("server %q: unknown field %q ignored", name, f))
		}
	}

	// "type" is VS Code's and Cursor's; "transport" some others'.
	for _, r := range []json.RawMessage{typ, transport} {
		if len(r) == 0 {
			continue
		}
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			return sc, nil, fmt.Errorf("server %q: field \"type\": %w", name, err)
		}
		switch strings.ToLower(s) {
		case "", "stdio":
			s = ""
		case "http", "streamable-http", "streamablehttp", "streamable_http":
			s = "http"
		case "sse":
			s = "sse"
		default:
			return sc, nil, fmt.Errorf("server %q: field \"type\": unknown transport %q (want stdio, http or sse)", name, s)
		}
		if sc.Type == "" {
			sc.Type = s
		}
	}

	if len(timeout) > 0 {
		d, err := parseTimeout(timeout)
		if err != nil {
			return sc, nil, fmt.Errorf("server %q: field \"timeout\": %w", name, err)
		}
		sc.Timeout = d
	}

	// Only ${VAR}: a bare $ stays as written (tokens and passwords hold them).
	expand := func(f, k, v string) string {
		return envRef.ReplaceAllStringFunc(v, func(ref string) string {
			env := ref[2 : len(ref)-1]
			val, ok := lookup(env)
			if !ok {
				warns = append(warns, fmt.Sprintf("server %q: %s %q: ${%s} is not set", name, f, k, env))
			}
			return val
		})
	}
	for k, v := range sc.Env {
		sc.Env[k] = expand("env", k, v)
	}
	for k, v := range sc.Headers {
		sc.Headers[k] = expand("header", k, v)
	}
	sc.URL = expand("field", "url", sc.URL)

	if err := sc.validate(name); err != nil {
		return sc, nil, err
	}
	return sc, warns, nil
}

// parseTimeout accepts a number of seconds or a Go duration string.
func parseTimeout(r json.RawMessage) (time.Duration, error) {
	var s string
	if json.Unmarshal(r, &s) == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			if secs, err2 := strconv.ParseFloat(s, 64); err2 == nil {
				d, err = time.Duration(secs*float64(time.Second)), nil
			}
		}
		if err != nil {
			return 0, err
		}
		if d < 0 {
			return 0, fmt.Errorf("negative timeout %q", s)
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(r, &secs); err != nil {
		return 0, fmt.Errorf("want seconds or a duration string, got %s", r)
	}
	if secs < 0 {
		return 0, fmt.Errorf("negative timeout %v", secs)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

var (
	protocolVersionRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	envRef            = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)
)

// validate reports the first problem with sc, naming the server and field.
func (sc ServerConfig) validate(name string) error {
	n := 0
	for _, set := range []bool{sc.Command != "", sc.URL != "", sc.Transport != nil} {
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
		return fmt.Errorf(`server %q: has more than one of "command", "url" and a Transport`, name)
	}
	if sc.URL != "" {
		u, err := url.Parse(sc.URL)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				ue.URL = RedactURL(ue.URL) // it may hold a credential
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
	}{{"allowedTools", sc.AllowedTools}, {"disabledTools", sc.DisabledTools}} {
		for _, p := range list.patterns {
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("server %q: field %q: bad pattern %q: %w", name, list.field, p, err)
			}
		}
	}
	if sc.Timeout < 0 {
		return fmt.Errorf(`server %q: field "timeout": negative`, name)
	}
	if sc.ProtocolVersion != "" && sc.ProtocolVersion != "latest" && !protocolVersionRE.MatchString(sc.ProtocolVersion) {
		return fmt.Errorf(`server %q: field "protocolVersion": %q is not a YYYY-MM-DD revision`, name, sc.ProtocolVersion)
	}
	return nil
}

// toolAllowed applies AllowedTools and DisabledTools to a tool's original
// name.
func (sc ServerConfig) toolAllowed(tool string) bool {
	match := func(patterns []string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, tool); ok || p == tool {
				return true
			}
		}
		return false
	}
	if len(sc.AllowedTools) > 0 && !match(sc.AllowedTools) {
		return false
	}
	return !match(sc.DisabledTools)
}
