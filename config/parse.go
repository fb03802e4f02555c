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

// object reads data (JSON with comments, a BOM allowed) as one JSON
// object whose keys are unique, the root of a config or a policy file;
// want says what it should be, for the error when it is not an object.
// Errors name file:line:col.
func (p *parser) object(data []byte, want string) (*jval, error) {
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
		return nil, p.errorf(root.off, "", "want %s, got %s", want, root.kind)
	}
	if err := p.unique(root, "", "key"); err != nil {
		return nil, err
	}
	return root, nil
}

func (p *parser) parse(data []byte) (*Config, error) {
	root, err := p.object(data, `an object with "mcpServers" or "servers"`)
	if err != nil {
		return nil, err
	}
	var servers, inputs *jval
	serversKey := ""
	var unknown []jmember
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
			p.warn(m.off, "", "unknown top-level field %q ignored%s", m.key, didYouMean(m.key, topLevelFields))
			unknown = append(unknown, m)
		}
	}
	if servers == nil {
		// A misspelt "mcpServers" is the likely cause: point at it.
		if len(unknown) > 0 {
			return nil, p.errorf(unknown[0].off, "", `no "mcpServers" or "servers" object; %s`, unknownFields(unknown, "top-level field", topLevelFields))
		}
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
				p.warn(m.off, ctx, "unknown field %q ignored%s", m.key, didYouMean(m.key, inputFields))
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
	if m.key == "" {
		return Server{}, p.errorf(m.off, "", "server with an empty name")
	}
	sctx := fmt.Sprintf("server %q", m.key)
	v := m.val
	if v.kind != jObject {
		return Server{}, p.errorf(v.off, sctx, "want an object, got %s", v.kind)
	}
	if err := p.unique(v, sctx, "field"); err != nil {
		return Server{}, err
	}
	s := &serverParse{p: p, ctx: sctx, fields: map[string]*jval{}, st: &serverState{}}
	for _, f := range v.members {
		if f.val.kind != jNull { // null means absent
			s.fields[f.key] = f.val
		}
	}
	// The stages, in the order their errors are reported.
	if err := s.read(); err != nil {
		return s.sc, err
	}
	unknown := s.warnUnknown(v.members)
	if err := s.transportType(); err != nil {
		return s.sc, err
	}
	s.expand()
	s.merge()
	if err := s.check(); err != nil {
		return s.sc, err
	}
	if s.st.err == nil {
		if err := s.sc.validate(m.key); err != nil {
			// An entry refused for what it lacks ("command", "url") most
			// often has it misspelt: name the fields not read, at the first.
			if len(unknown) > 0 {
				return s.sc, p.errorf(unknown[0].off, "", "%v; %s", err, unknownFields(unknown, "field", serverFields))
			}
			return s.sc, p.errorf(m.off, "", "%v", err)
		}
	}
	s.sc.Err = s.st.err
	return s.sc, nil
}

// serverParse is one server entry being read, stage by stage: its fields
// by name (null ones left out), the Server so far, what parsing collects
// besides it, and the values one stage reads for a later one.
type serverParse struct {
	p      *parser
	ctx    string // server "name"
	fields map[string]*jval
	st     *serverState
	sc     Server

	typ, transport, envFile string
	env, headers            []*keyValue
}

// fctx is the context of field f in messages.
func (s *serverParse) fctx(f string) string { return fmt.Sprintf("%s: field %q", s.ctx, f) }

// read reads every field's value, checking its JSON type.
func (s *serverParse) read() error {
	if err := s.readStrings(); err != nil {
		return err
	}
	var err error
	if s.env, err = s.p.stringMap(s.fields["env"], s.fctx("env"), true); err != nil {
		return err
	}
	if s.headers, err = s.p.stringMap(s.fields["headers"], s.fctx("headers"), false); err != nil {
		return err
	}
	if err := s.readFlags(); err != nil {
		return err
	}
	if fv := s.fields["oauth"]; fv != nil {
		if err := s.p.parseOAuth(fv, s.ctx, s.st, &s.sc); err != nil {
			return err
		}
	}
	if fv := s.fields["timeout"]; fv != nil {
		if s.sc.Timeout, err = parseTimeout(fv); err != nil {
			return s.p.errorf(fv.off, s.fctx("timeout"), "%v", err)
		}
	}
	return nil
}

// readStrings reads the string and string-list fields.
func (s *serverParse) readStrings() error {
	var err error
	str := func(f string, dst *string) {
		if err != nil || s.fields[f] == nil {
			return
		}
		if fv := s.fields[f]; fv.kind != jString {
			err = s.p.errorf(fv.off, s.fctx(f), "want a string, got %s", fv.kind)
		} else {
			*dst = fv.str
		}
	}
	list := func(f string, dst *[]string) {
		if err != nil || s.fields[f] == nil {
			return
		}
		*dst, err = s.p.strings(s.fields[f], s.fctx(f))
	}
	sc := &s.sc
	str("command", &sc.Command)
	list("args", &sc.Args)
	str("cwd", &sc.Cwd)
	str("url", &sc.URL)
	str("type", &s.typ)
	str("transport", &s.transport)
	str("envFile", &s.envFile)
	list("allowedTools", &sc.AllowedTools)
	list("disabledTools", &sc.DisabledTools)
	list("alwaysLoadTools", &sc.AlwaysLoadTools)
	str("protocolVersion", &sc.ProtocolVersion)
	return err
}

// readFlags reads disabled, alwaysLoad and inheritEnv (true, false or a
// list of names).
func (s *serverParse) readFlags() error {
	for _, b := range []struct {
		field string
		dst   *bool
	}{{"disabled", &s.sc.Disabled}, {"alwaysLoad", &s.sc.AlwaysLoad}} {
		if fv := s.fields[b.field]; fv != nil {
			if fv.kind != jBool {
				return s.p.errorf(fv.off, s.fctx(b.field), "want true or false, got %s", fv.kind)
			}
			*b.dst = fv.b
		}
	}
	fv := s.fields["inheritEnv"]
	if fv == nil {
		return nil
	}
	switch fv.kind {
	case jBool:
		if fv.b {
			s.sc.InheritEnv = []string{"*"}
		}
	case jArray:
		var err error
		s.sc.InheritEnv, err = s.p.strings(fv, s.fctx("inheritEnv"))
		return err
	default:
		return s.p.errorf(fv.off, s.fctx("inheritEnv"), "want true, false or an array of names, got %s", fv.kind)
	}
	return nil
}

// warnUnknown warns about each field it does not know, with the known
// field it is closest to, if any, and returns them; the fields other
// clients write that mean nothing here are left out.
func (s *serverParse) warnUnknown(members []jmember) []jmember {
	var unknown []jmember
	for _, f := range members {
		if slices.Contains(serverFields, f.key) || quietServerFields[f.key] {
			continue
		}
		s.p.warn(f.off, s.ctx, "unknown field %q ignored%s", f.key, didYouMean(f.key, serverFields))
		unknown = append(unknown, f)
	}
	return unknown
}

// unknownFields names the fields of an entry that was refused, each with
// its suggestion: `unknown field "comand" (did you mean "command"?)`;
// noun is "field" or "top-level field".
func unknownFields(fields []jmember, noun string, known []string) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = fmt.Sprintf("unknown %s %q%s", noun, f.key, didYouMean(f.key, known))
	}
	return strings.Join(parts, ", ")
}

// transportType reads "type" (VS Code's, Cursor's and Claude Code's) and
// "transport" (some others') into Server.Type; the first one set wins.
func (s *serverParse) transportType() error {
	for _, t := range []struct{ field, value string }{{"type", s.typ}, {"transport", s.transport}} {
		if s.fields[t.field] == nil {
			continue
		}
		typ := ""
		switch strings.ToLower(t.value) {
		case "", "stdio":
		case "http", "streamable-http", "streamablehttp", "streamable_http":
			typ = "http"
		case "sse":
			typ = "sse"
		default:
			return s.p.errorf(s.fields[t.field].off, s.fctx(t.field), "unknown transport %q (want stdio, http or sse)", t.value)
		}
		if s.sc.Type == "" {
			s.sc.Type = typ
		}
	}
	return nil
}

// expand expands the variables of every field that may hold them.
func (s *serverParse) expand() {
	p, sc := s.p, &s.sc
	one := func(f string, dst *string) {
		if s.fields[f] != nil {
			*dst = p.expand(*dst, s.fields[f].off, s.fctx(f), s.st)
		}
	}
	one("command", &sc.Command)
	one("cwd", &sc.Cwd)
	one("url", &sc.URL)
	one("envFile", &s.envFile)
	for i := range sc.Args {
		sc.Args[i] = p.expand(sc.Args[i], s.fields["args"].elems[i].off, s.fctx("args"), s.st)
	}
	for _, kv := range s.env {
		kv.value = p.expand(kv.value, kv.off, fmt.Sprintf("%s: env %q", s.ctx, kv.key), s.st)
	}
	for _, kv := range s.headers {
		kv.value = p.expand(kv.value, kv.off, fmt.Sprintf("%s: header %q", s.ctx, kv.key), s.st)
	}
}

// merge fills Env from the envFile, then env (which wins), and Headers.
func (s *serverParse) merge() {
	sc := &s.sc
	if s.envFile != "" && s.st.err == nil {
		s.p.loadEnvFile(s.envFile, s.fields["envFile"].off, s.fctx("envFile"), s.st, sc)
	}
	for _, kv := range s.env {
		if sc.Env == nil {
			sc.Env = map[string]string{}
		}
		sc.Env[kv.key] = kv.value
	}
	for _, kv := range s.headers {
		if sc.Headers == nil {
			sc.Headers = map[string]string{}
		}
		sc.Headers[kv.key] = kv.value
	}
}

// check makes the checks that can point at a field: the URL's scheme, the
// patterns, the protocol revision.
func (s *serverParse) check() error {
	sc := &s.sc
	if sc.URL != "" && s.st.err == nil {
		if u, err := url.Parse(sc.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			// The URL may hold a secret: don't repeat it.
			return s.p.errorf(s.fields["url"].off, s.fctx("url"), "want an http or https URL")
		}
	}
	for _, f := range []string{"allowedTools", "disabledTools", "inheritEnv", "alwaysLoadTools"} {
		fv := s.fields[f]
		if fv == nil || fv.kind != jArray {
			continue
		}
		for _, e := range fv.elems {
			if _, err := path.Match(e.str, ""); err != nil {
				return s.p.errorf(e.off, s.fctx(f), "bad pattern %q: %v", e.str, err)
			}
		}
	}
	if fv := s.fields["protocolVersion"]; fv != nil && sc.ProtocolVersion != "latest" && !protocolVersionRE.MatchString(sc.ProtocolVersion) {
		return s.p.errorf(fv.off, s.fctx("protocolVersion"), "%q is not a YYYY-MM-DD revision", sc.ProtocolVersion)
	}
	return nil
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
