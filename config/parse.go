package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// parser turns the bytes of a config file into a Config. It works on
// the jval tree so that every error and warning can name file:line:col.
type parser struct {
	file      string // as the caller named it, for messages
	dir       string // the file's absolute folder: envFile resolves against it
	workspace string // ${workspaceFolder}
	inputVals map[string]string
	lookup    func(string) (string, bool)
	readFile  func(string) ([]byte, error)

	text     []byte // the file without its BOM; offsets index it
	inputs   map[string]inputDef
	warnings []warning
	warned   map[string]bool
}

type warning struct {
	off int
	msg string
}

// inputDef is one entry of VS Code's "inputs".
type inputDef struct {
	off int
	def *string // "default", if any
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// at formats an offset as file:line:col.
func (p *parser) at(off int) string { return position(p.file, p.text, off) }

// errorf makes an error at off; ctx ("server \"x\": field \"args\"") may be
// empty. Messages never include a value that came from a variable.
func (p *parser) errorf(off int, ctx, format string, args ...any) error {
	if ctx != "" {
		ctx += ": "
	}
	return fmt.Errorf("%w: %s: %s%s", ErrInvalid, p.at(off), ctx, fmt.Sprintf(format, args...))
}

// warn records a warning at off, once per distinct message.
func (p *parser) warn(off int, ctx, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if ctx != "" {
		msg = ctx + ": " + msg
	}
	if p.warned[msg] {
		return
	}
	if p.warned == nil {
		p.warned = map[string]bool{}
	}
	p.warned[msg] = true
	p.warnings = append(p.warnings, warning{off, p.at(off) + ": " + msg})
}

func (p *parser) parse(data []byte) (*Config, error) {
	p.text = bytes.TrimPrefix(data, utf8BOM)
	clean, err := stripJSONC(p.text)
	if err != nil {
		var je *jsoncError
		errors.As(err, &je)
		return nil, p.errorf(je.off, "", "%s", je.msg)
	}
	root, err := parseJSON(clean)
	if err != nil {
		var se *syntaxError
		errors.As(err, &se)
		return nil, p.errorf(se.off, "", "%s", se.msg)
	}
	if root.kind != jObject {
		return nil, p.errorf(root.off, "", `want an object with "mcpServers" or "servers", got %s`, root.kind)
	}
	if err := p.unique(root, "", "key"); err != nil {
		return nil, err
	}
	var servers, inputs *jval
	serversKey := ""
	for _, m := range root.members {
		switch m.key {
		case "mcpServers", "servers":
			if servers != nil {
				return nil, p.errorf(m.off, "", "both %q and %q: use one", serversKey, m.key)
			}
			servers, serversKey = m.val, m.key
		case "inputs":
			inputs = m.val
		case "$schema":
		default:
			p.warn(m.off, "", "unknown top-level field %q ignored", m.key)
		}
	}
	if servers == nil {
		return nil, p.errorf(root.off, "", `no "mcpServers" or "servers" object`)
	}
	if err := p.parseInputs(inputs); err != nil {
		return nil, err
	}
	ctx := fmt.Sprintf("field %q", serversKey)
	if servers.kind != jObject {
		return nil, p.errorf(servers.off, ctx, "want an object of servers, got %s", servers.kind)
	}
	if err := p.unique(servers, ctx, "server"); err != nil {
		return nil, err
	}
	if len(servers.members) == 0 {
		p.warn(servers.off, ctx, "no servers: there are no tools to offer")
	}
	cfg := &Config{Servers: map[string]Server{}}
	for _, m := range servers.members {
		sc, err := p.parseServer(m)
		if err != nil {
			return nil, err
		}
		cfg.Servers[m.key] = sc
	}
	// In file order, though top-level fields are read before servers.
	slices.SortStableFunc(p.warnings, func(a, b warning) int { return cmp.Compare(a.off, b.off) })
	for _, w := range p.warnings {
		cfg.Warnings = append(cfg.Warnings, w.msg)
	}
	return cfg, nil
}

// unique fails on the second occurrence of a key in an object.
func (p *parser) unique(obj *jval, ctx, noun string) error {
	first := map[string]int{}
	for _, m := range obj.members {
		if o, ok := first[m.key]; ok {
			line, _ := lineCol(p.text, o)
			return p.errorf(m.off, ctx, "duplicate %s %q (first on line %d)", noun, m.key, line)
		}
		first[m.key] = m.off
	}
	return nil
}

// parseInputs reads VS Code's "inputs": [{type, id, description, password,
// default, options}].
func (p *parser) parseInputs(v *jval) error {
	p.inputs = map[string]inputDef{}
	if v == nil || v.kind == jNull {
		return nil
	}
	if v.kind != jArray {
		return p.errorf(v.off, `field "inputs"`, "want an array of objects, got %s", v.kind)
	}
	for i, e := range v.elems {
		ctx := fmt.Sprintf(`field "inputs": element %d`, i+1)
		if e.kind != jObject {
			return p.errorf(e.off, ctx, "want an object, got %s", e.kind)
		}
		if err := p.unique(e, ctx, "field"); err != nil {
			return err
		}
		var id *jval
		for _, m := range e.members {
			if m.key == "id" {
				id = m.val
			}
		}
		if id == nil {
			return p.errorf(e.off, ctx, `no "id"`)
		}
		if id.kind != jString || id.str == "" {
			return p.errorf(id.off, ctx+`: field "id"`, "want a non-empty string, got %s", describeKind(id))
		}
		ctx = fmt.Sprintf("input %q", id.str)
		if o, ok := p.inputs[id.str]; ok {
			line, _ := lineCol(p.text, o.off)
			return p.errorf(id.off, ctx, "duplicate id (first on line %d)", line)
		}
		def := inputDef{off: id.off}
		for _, m := range e.members {
			fctx := fmt.Sprintf("%s: field %q", ctx, m.key)
			switch m.key {
			case "id":
			case "type":
				if m.val.kind != jString {
					return p.errorf(m.val.off, fctx, "want a string, got %s", m.val.kind)
				}
				if m.val.str != "promptString" && m.val.str != "pickString" {
					p.warn(m.val.off, fctx, "type %q is not supported; the value comes from Options.Inputs", m.val.str)
				}
			case "description":
				if m.val.kind != jString {
					return p.errorf(m.val.off, fctx, "want a string, got %s", m.val.kind)
				}
			case "password":
				if m.val.kind != jBool {
					return p.errorf(m.val.off, fctx, "want true or false, got %s", m.val.kind)
				}
			case "default":
				if m.val.kind != jString {
					return p.errorf(m.val.off, fctx, "want a string, got %s", m.val.kind)
				}
				s := m.val.str
				def.def = &s
			case "options":
				if m.val.kind != jArray {
					return p.errorf(m.val.off, fctx, "want an array, got %s", m.val.kind)
				}
				for _, o := range m.val.elems {
					if err := p.checkOption(o, fctx); err != nil {
						return err
					}
				}
			default:
				p.warn(m.off, ctx, "unknown field %q ignored", m.key)
			}
		}
		p.inputs[id.str] = def
	}
	return nil
}

// checkOption accepts a pickString option: a string or {"label", "value"}.
func (p *parser) checkOption(o *jval, ctx string) error {
	switch o.kind {
	case jString:
		return nil
	case jObject:
		hasValue := false
		for _, m := range o.members {
			if (m.key == "value" || m.key == "label") && m.val.kind != jString {
				return p.errorf(m.val.off, ctx, "option %q: want a string, got %s", m.key, m.val.kind)
			}
			hasValue = hasValue || m.key == "value"
		}
		if !hasValue {
			return p.errorf(o.off, ctx, `option without "value"`)
		}
		return nil
	default:
		return p.errorf(o.off, ctx, "want strings or {label, value} objects, got %s", o.kind)
	}
}

// Fields other clients write that we understand as no-ops: not worth a
// warning.
var quietServerFields = map[string]bool{"autoApprove": true, "alwaysAllow": true, "description": true, "dev": true, "gallery": true}

// serverState is what parsing one server collects besides its Server.
type serverState struct {
	err error // the first reason the server is unusable
}

func (p *parser) parseServer(m jmember) (Server, error) {
	var sc Server
	if m.key == "" {
		return sc, p.errorf(m.off, "", "server with an empty name")
	}
	sctx := fmt.Sprintf("server %q", m.key)
	v := m.val
	if v.kind != jObject {
		return sc, p.errorf(v.off, sctx, "want an object, got %s", v.kind)
	}
	if err := p.unique(v, sctx, "field"); err != nil {
		return sc, err
	}
	fields := map[string]*jval{}
	for _, f := range v.members {
		if f.val.kind == jNull {
			continue // null means absent
		}
		fields[f.key] = f.val
	}
	st := &serverState{}
	fctx := func(f string) string { return fmt.Sprintf("%s: field %q", sctx, f) }

	var err error
	str := func(f string, dst *string) {
		if err != nil || fields[f] == nil {
			return
		}
		if fv := fields[f]; fv.kind != jString {
			err = p.errorf(fv.off, fctx(f), "want a string, got %s", fv.kind)
		} else {
			*dst = fv.str
		}
	}
	list := func(f string, dst *[]string) {
		if err != nil || fields[f] == nil {
			return
		}
		*dst, err = p.strings(fields[f], fctx(f))
	}
	var typ, transport, envFile string
	str("command", &sc.Command)
	list("args", &sc.Args)
	str("cwd", &sc.Cwd)
	str("url", &sc.URL)
	str("type", &typ)
	str("transport", &transport)
	str("envFile", &envFile)
	list("allowedTools", &sc.AllowedTools)
	list("disabledTools", &sc.DisabledTools)
	list("alwaysLoadTools", &sc.AlwaysLoadTools)
	str("protocolVersion", &sc.ProtocolVersion)
	if err != nil {
		return sc, err
	}
	env, err := p.stringMap(fields["env"], fctx("env"), true)
	if err != nil {
		return sc, err
	}
	headers, err := p.stringMap(fields["headers"], fctx("headers"), false)
	if err != nil {
		return sc, err
	}
	if fv := fields["disabled"]; fv != nil {
		if fv.kind != jBool {
			return sc, p.errorf(fv.off, fctx("disabled"), "want true or false, got %s", fv.kind)
		}
		sc.Disabled = fv.b
	}
	if fv := fields["alwaysLoad"]; fv != nil {
		if fv.kind != jBool {
			return sc, p.errorf(fv.off, fctx("alwaysLoad"), "want true or false, got %s", fv.kind)
		}
		sc.AlwaysLoad = fv.b
	}
	if fv := fields["inheritEnv"]; fv != nil {
		switch fv.kind {
		case jBool:
			if fv.b {
				sc.InheritEnv = []string{"*"}
			}
		case jArray:
			if sc.InheritEnv, err = p.strings(fv, fctx("inheritEnv")); err != nil {
				return sc, err
			}
		default:
			return sc, p.errorf(fv.off, fctx("inheritEnv"), "want true, false or an array of names, got %s", fv.kind)
		}
	}
	if fv := fields["oauth"]; fv != nil {
		if err := p.parseOAuth(fv, sctx, st, &sc); err != nil {
			return sc, err
		}
	}
	if fv := fields["timeout"]; fv != nil {
		if sc.Timeout, err = parseTimeout(fv); err != nil {
			return sc, p.errorf(fv.off, fctx("timeout"), "%v", err)
		}
	}
	for _, f := range v.members {
		switch f.key {
		case "command", "args", "env", "cwd", "url", "headers", "type", "transport", "envFile", "inheritEnv",
			"allowedTools", "disabledTools", "timeout", "disabled", "protocolVersion", "oauth", "alwaysLoad", "alwaysLoadTools":
		default:
			if !quietServerFields[f.key] {
				p.warn(f.off, sctx, "unknown field %q ignored", f.key)
			}
		}
	}

	// "type" is VS Code's, Cursor's and Claude Code's; "transport" some
	// others'.
	for _, t := range []struct{ field, value string }{{"type", typ}, {"transport", transport}} {
		if fields[t.field] == nil {
			continue
		}
		s := ""
		switch strings.ToLower(t.value) {
		case "", "stdio":
		case "http", "streamable-http", "streamablehttp", "streamable_http":
			s = "http"
		case "sse":
			s = "sse"
		default:
			return sc, p.errorf(fields[t.field].off, fctx(t.field), "unknown transport %q (want stdio, http or sse)", t.value)
		}
		if sc.Type == "" {
			sc.Type = s
		}
	}

	// Variables.
	one := func(f string, dst *string) {
		if fields[f] != nil {
			*dst = p.expand(*dst, fields[f].off, fctx(f), st)
		}
	}
	one("command", &sc.Command)
	one("cwd", &sc.Cwd)
	one("url", &sc.URL)
	one("envFile", &envFile)
	for i := range sc.Args {
		sc.Args[i] = p.expand(sc.Args[i], fields["args"].elems[i].off, fctx("args"), st)
	}
	for _, kv := range env {
		kv.value = p.expand(kv.value, kv.off, fmt.Sprintf("%s: env %q", sctx, kv.key), st)
	}
	for _, kv := range headers {
		kv.value = p.expand(kv.value, kv.off, fmt.Sprintf("%s: header %q", sctx, kv.key), st)
	}

	if envFile != "" && st.err == nil {
		p.loadEnvFile(envFile, fields["envFile"].off, fctx("envFile"), st, &sc)
	}
	for _, kv := range env {
		if sc.Env == nil {
			sc.Env = map[string]string{}
		}
		sc.Env[kv.key] = kv.value
	}
	for _, kv := range headers {
		if sc.Headers == nil {
			sc.Headers = map[string]string{}
		}
		sc.Headers[kv.key] = kv.value
	}

	// Checks that can point at a field.
	if sc.URL != "" && st.err == nil {
		if u, err := url.Parse(sc.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			// The URL may hold a secret: don't repeat it.
			return sc, p.errorf(fields["url"].off, fctx("url"), "want an http or https URL")
		}
	}
	for _, f := range []string{"allowedTools", "disabledTools", "inheritEnv", "alwaysLoadTools"} {
		fv := fields[f]
		if fv == nil || fv.kind != jArray {
			continue
		}
		for _, e := range fv.elems {
			if _, err := path.Match(e.str, ""); err != nil {
				return sc, p.errorf(e.off, fctx(f), "bad pattern %q: %v", e.str, err)
			}
		}
	}
	if fv := fields["protocolVersion"]; fv != nil && sc.ProtocolVersion != "latest" && !protocolVersionRE.MatchString(sc.ProtocolVersion) {
		return sc, p.errorf(fv.off, fctx("protocolVersion"), "%q is not a YYYY-MM-DD revision", sc.ProtocolVersion)
	}
	if st.err == nil {
		if err := sc.validate(m.key); err != nil {
			return sc, p.errorf(m.off, "", "%v", err)
		}
	}
	sc.Err = st.err
	return sc, nil
}

// strings reads an array of strings.
func (p *parser) strings(v *jval, ctx string) ([]string, error) {
	if v.kind != jArray {
		return nil, p.errorf(v.off, ctx, "want an array of strings, got %s", v.kind)
	}
	out := make([]string, 0, len(v.elems))
	for _, e := range v.elems {
		if e.kind != jString {
			return nil, p.errorf(e.off, ctx, "want an array of strings, got %s", e.kind)
		}
		out = append(out, e.str)
	}
	return out, nil
}

// keyValue is an entry of "env" or "headers", with where its value starts.
type keyValue struct {
	key, value string
	off        int
}

// stringMap reads an object of strings. With scalars, numbers and booleans
// count as their text (VS Code allows them in env) and null entries are
// left out.
func (p *parser) stringMap(v *jval, ctx string, scalars bool) ([]*keyValue, error) {
	if v == nil {
		return nil, nil
	}
	if v.kind != jObject {
		return nil, p.errorf(v.off, ctx, "want an object of strings, got %s", v.kind)
	}
	if err := p.unique(v, ctx, "key"); err != nil {
		return nil, err
	}
	var out []*keyValue
	for _, m := range v.members {
		switch {
		case m.val.kind == jString:
		case scalars && m.val.kind == jNull:
			continue
		case scalars && m.val.kind == jNumber:
		case scalars && m.val.kind == jBool:
			m.val.str = strconv.FormatBool(m.val.b)
		default:
			return nil, p.errorf(m.val.off, fmt.Sprintf("%s: key %q", ctx, m.key), "want a string, got %s", m.val.kind)
		}
		out = append(out, &keyValue{key: m.key, value: m.val.str, off: m.val.off})
	}
	return out, nil
}

func describeKind(v *jval) string {
	if v.kind == jString {
		return "an empty string"
	}
	return v.kind.String()
}

// maxTimeoutSeconds is the largest timeout a time.Duration holds.
const maxTimeoutSeconds = math.MaxInt64 / int64(time.Second)

// durationRE matches what time.ParseDuration accepts, so that a duration
// it rejects can be told "too large" rather than "malformed".
var durationRE = regexp.MustCompile(`^[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`)

// parseTimeout accepts a number of seconds or a Go duration string.
func parseTimeout(v *jval) (time.Duration, error) {
	tooLarge := func(s string) error {
		return fmt.Errorf("timeout %s is too large (max %d seconds)", s, maxTimeoutSeconds)
	}
	seconds := func(text, shown string) (time.Duration, error) {
		secs, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("timeout %s is not a number", shown)
		}
		switch {
		case math.IsNaN(secs):
			return 0, fmt.Errorf("timeout %s is not a number", shown)
		case secs < 0:
			return 0, fmt.Errorf("timeout %s must not be negative", shown)
		case math.IsInf(secs, 0) || secs >= float64(maxTimeoutSeconds+1):
			return 0, tooLarge(shown)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	switch v.kind {
	case jNumber:
		return seconds(v.str, v.str+" seconds")
	case jString:
		s := strings.TrimSpace(v.str)
		d, err := time.ParseDuration(s)
		if err == nil {
			if d < 0 {
				return 0, fmt.Errorf("timeout %q must not be negative", v.str)
			}
			return d, nil
		}
		if durationRE.MatchString(s) {
			if strings.HasPrefix(s, "-") {
				return 0, fmt.Errorf("timeout %q must not be negative", v.str)
			}
			return 0, tooLarge(strconv.Quote(v.str))
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return seconds(s, strconv.Quote(v.str))
		}
		return 0, fmt.Errorf(`want seconds or a duration ("45s"), got %q`, v.str)
	default:
		return 0, fmt.Errorf(`want seconds or a duration ("45s"), got %s`, v.kind)
	}
}

// varRef matches ${...}. A bare $ stays as written: tokens and passwords
// hold them.
var (
	varRef     = regexp.MustCompile(`\$\{([^{}]*)\}`)
	varName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	varDefault = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*):-(.*)$`)
)

// expand replaces the variables in s, whose string starts at off. ctx names
// the server and field for warnings. An input without a value makes the
// server unusable and stays as written.
func (p *parser) expand(s string, off int, ctx string, st *serverState) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		env := func(n string) string {
			val, ok := p.lookup(n)
			if !ok {
				p.warn(off, ctx, "%s is not set", ref)
			}
			return val
		}
		switch {
		case strings.HasPrefix(name, "env:"):
			return env(name[len("env:"):])
		case strings.HasPrefix(name, "input:"):
			id := name[len("input:"):]
			if val, ok := p.inputVals[id]; ok {
				return val
			}
			def, declared := p.inputs[id]
			if declared && def.def != nil {
				return *def.def
			}
			if st.err == nil {
				why := "has no value and no default"
				if !declared {
					why = `is not in "inputs" and has no value`
				}
				st.err = &InputError{ID: id, msg: fmt.Sprintf("%v: %s: %s: input %q %s (set Options.Inputs[%q])", ErrInvalid, p.at(off), ctx, id, why, id)}
			}
			return ref
		case name == "workspaceFolder":
			return p.workspace
		case name == "workspaceFolderBasename":
			return filepath.Base(p.workspace)
		case name == "userHome":
			home, err := os.UserHomeDir()
			if err != nil {
				p.warn(off, ctx, "%s: %v", ref, err)
			}
			return home
		case name == "pathSeparator" || name == "/":
			return string(filepath.Separator)
		case varName.MatchString(name):
			return env(name)
		}
		if m := varDefault.FindStringSubmatch(name); m != nil {
			if val, ok := p.lookup(m[1]); ok && val != "" {
				return val
			}
			return m[2]
		}
		p.warn(off, ctx, "unsupported variable %s left as written", ref)
		return ref
	})
}

// loadEnvFile adds the variables of a dotenv file to sc.Env; problems make
// the server unusable rather than the file invalid, as the file may appear
// later.
func (p *parser) loadEnvFile(name string, off int, ctx string, st *serverState, sc *Server) {
	if !filepath.IsAbs(name) {
		name = filepath.Join(p.dir, name)
	}
	data, err := p.readFile(name)
	if err != nil {
		// The path may hold a variable's value: keep only the reason.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		st.err = fmt.Errorf("%w: %s: %s: cannot read it: %v", ErrInvalid, p.at(off), ctx, err)
		return
	}
	vars, err := parseDotenv(data)
	if err != nil {
		st.err = fmt.Errorf("%w: %s: %s: %v", ErrInvalid, p.at(off), ctx, err)
		return
	}
	if len(vars) > 0 && sc.Env == nil {
		sc.Env = map[string]string{}
	}
	for k, v := range vars {
		sc.Env[k] = v
	}
}
