// Package redact keeps the secrets of URLs out of errors and logs: one rule
// for what of a URL is secret ([URL]), and a [Scrubber] that removes the
// secrets of known URLs from any text, error or log record. upstream uses it for
// server URLs, config for the URLs in its errors, provider for base URLs.
package redact

import (
	"context"
	"log/slog"
	"net/url"
	"slices"
	"strings"
)

// URLs often carry credentials (https://host/mcp?api_key=…,
// https://host/key/abc123/sse, https://token@host/). The rule, applied by
// URL:
//
//   - userinfo (user and password) becomes REDACTED;
//   - every query value becomes REDACTED (the keys stay, for diagnosis);
//   - the fragment becomes REDACTED;
//   - a path segment that follows one naming a credential (key, apikey,
//     api_key, token, secret, auth, password, …) becomes REDACTED, and so
//     does any segment that looks like a random token: 16 characters or
//     more mixing letters and digits.
//
// Scheme, host, port and the other path segments stay, so that an error
// still says which server failed. A string that does not parse as a URL
// keeps only its scheme and host. Text that comes from elsewhere (the MCP
// SDK, net/http) is scrubbed by a Scrubber: the URL is replaced wherever it
// appears, and so is each secret part of at least 6 bytes.

const redacted = "REDACTED"

// URL returns raw with its secret parts replaced by REDACTED (see above).
// A string that does not parse as a URL keeps only its scheme and host,
// without userinfo: "scheme://host/REDACTED", or REDACTED without a
// scheme.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil {
		return redactParsed(u).String()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/?#@") {
		return redacted
	}
	host := rest
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if host == rest {
		return scheme + "://" + host
	}
	return scheme + "://" + host + "/" + redacted
}

func redactParsed(u *url.URL) *url.URL {
	r := *u
	if r.User != nil {
		r.User = url.User(redacted)
	}
	if r.RawQuery != "" {
		q := r.Query()
		for k := range q {
			for i := range q[k] {
				q[k][i] = redacted
			}
		}
		// Encode sorts by key; a query that did not parse loses nothing
		// worth keeping.
		r.RawQuery = q.Encode()
	}
	if r.Fragment != "" || r.RawFragment != "" {
		r.Fragment, r.RawFragment = redacted, ""
	}
	segs := strings.Split(r.EscapedPath(), "/")
	changed := false
	for i := range segs {
		if secretSegment(segs, i) {
			segs[i] = redacted
			changed = true
		}
	}
	if changed {
		r.RawPath = strings.Join(segs, "/")
		r.Path, _ = url.PathUnescape(r.RawPath)
	}
	return &r
}

// credentialWords name a path segment whose next segment is a credential.
var credentialWords = map[string]bool{
	"key": true, "keys": true, "apikey": true, "api_key": true, "api-key": true, "token": true, "tokens": true,
	"access_token": true, "secret": true, "secrets": true, "auth": true, "password": true, "pass": true, "credential": true, "credentials": true,
}

func secretSegment(segs []string, i int) bool {
	s := segs[i]
	if s == "" {
		return false
	}
	if i > 0 && credentialWords[strings.ToLower(segs[i-1])] {
		return true
	}
	if len(s) < 16 {
		return false
	}
	letters, digits := false, false
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letters = true
		case c == '-' || c == '_' || c == '.' || c == '~' || c == '%':
		default:
			return false
		}
	}
	return letters && digits
}

// A Scrubber removes the secrets of a set of URLs from any text: each URL
// becomes what URL makes of it, and each secret part of it (userinfo, query
// values, fragment, secret path segments) of at least 6 bytes becomes
// REDACTED. A nil *Scrubber scrubs nothing. It is safe for concurrent use.
type Scrubber struct {
	repl *strings.Replacer // nil when there is nothing to scrub
}

// NewScrubber returns a Scrubber for urls; empty strings are ignored.
func NewScrubber(urls []string) *Scrubber {
	var pairs []string
	add := func(secret, with string) {
		if secret != "" && secret != with {
			pairs = append(pairs, secret, with)
		}
	}
	var parts []string
	for _, raw := range urls {
		if raw == "" {
			continue
		}
		red := URL(raw)
		add(raw, red)
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		add(u.String(), red)
		// net/http prints URLs with the password stripped.
		if _, has := u.User.Password(); has {
			add(u.User.Username()+":***@", redacted+"@")
		}
		if u.User != nil {
			parts = append(parts, u.User.String(), u.User.Username())
			if p, ok := u.User.Password(); ok {
				parts = append(parts, p)
			}
		}
		for _, vs := range u.Query() {
			parts = append(parts, vs...)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				parts = append(parts, url.QueryEscape(v))
			}
		}
		parts = append(parts, u.Fragment)
		segs := strings.Split(u.EscapedPath(), "/")
		for i := range segs {
			if secretSegment(segs, i) {
				parts = append(parts, segs[i])
			}
		}
	}
	// Short values ("1", "en") would scrub ordinary words; they are
	// covered where the whole URL appears.
	for _, p := range parts {
		if len(p) >= 6 {
			add(p, redacted)
		}
	}
	if len(pairs) == 0 {
		return &Scrubber{}
	}
	// Longest first, so that a whole URL wins over a part of it.
	type pair struct{ old, new string }
	var ps []pair
	for i := 0; i < len(pairs); i += 2 {
		ps = append(ps, pair{pairs[i], pairs[i+1]})
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return len(b.old) - len(a.old) })
	pairs = pairs[:0]
	for _, p := range ps {
		pairs = append(pairs, p.old, p.new)
	}
	return &Scrubber{repl: strings.NewReplacer(pairs...)}
}

// String returns s scrubbed.
func (r *Scrubber) String(s string) string {
	if r == nil || r.repl == nil {
		return s
	}
	return r.repl.Replace(s)
}

// Err returns err with its text scrubbed; errors.Is and errors.As still
// see the original chain. A nil error stays nil.
func (r *Scrubber) Err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := r.String(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Handler returns a handler that scrubs log records (message, string and
// error attributes, groups) before h sees them.
func (r *Scrubber) Handler(h slog.Handler) slog.Handler {
	if r == nil || r.repl == nil {
		return h
	}
	return &redactHandler{h: h, r: r}
}

type redactHandler struct {
	h slog.Handler
	r *Scrubber
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &redactHandler{h: h.h.WithAttrs(clean), r: h.r}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{h: h.h.WithGroup(name), r: h.r}
}

func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, x := range g {
			clean[i] = h.attr(x)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.Any(a.Key, h.r.Err(err))
		}
		if s := v.String(); s != h.r.String(s) {
			return slog.String(a.Key, h.r.String(s))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
