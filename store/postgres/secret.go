package postgres

import (
	"net/url"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/internal/redact"
)

// What of a PostgreSQL URL is secret: the password, in the userinfo or
// as the password (or sslpassword) parameter. The user, host, port,
// database and other parameters say which server failed, and stay.

// secretParams are the URL parameters whose values are secret.
var secretParams = []string{"password", "sslpassword"}

// redactURL returns raw with its password replaced by REDACTED. A string
// that does not parse as a URL keeps only its scheme and host (the
// generic rule of internal/redact).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redact.URL(raw)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "REDACTED")
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k, vs := range q {
			if slices.Contains(secretParams, strings.ToLower(k)) {
				for i := range vs {
					vs[i] = "REDACTED"
				}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// secrets returns the secret strings of raw, as written and unescaped,
// found by hand so that a URL Go's parser refuses (a bad port) still has
// its password removed from the messages that quote it.
func secrets(raw string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if u, err := url.PathUnescape(s); err == nil && u != s && u != "" {
			out = append(out, u)
		}
	}
	rest := raw
	if _, after, ok := strings.Cut(raw, "://"); ok {
		rest = after
	}
	authority, query := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		query = rest[i+1:]
		if j := strings.IndexByte(query, '#'); j >= 0 {
			query = query[:j]
		}
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if _, pw, ok := strings.Cut(authority[:at], ":"); ok {
			add(pw)
		}
	}
	for kv := range strings.SplitSeq(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if slices.Contains(secretParams, strings.ToLower(k)) {
			add(v)
			if uv, err := url.QueryUnescape(v); err == nil {
				add(uv)
			}
		}
	}
	// Longest first, so that a secret containing another is removed whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// scrub returns msg with every secret replaced by REDACTED.
func scrub(secrets []string, msg string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "REDACTED")
	}
	return msg
}
