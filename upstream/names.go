package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxNameLen is the longest qualified name: OpenAI's limit for a function
// name (^[a-zA-Z0-9_-]{1,64}$).
const maxNameLen = 64

// maxPrefixLen keeps long server names from leaving no room for the tool.
const maxPrefixLen = 32

// QualifiedName returns the name under which a Hub exposes a server's tool:
// "server__tool", a valid OpenAI function name.
//
// It depends only on the two names, so it is the same on every run and in
// every process. Characters outside [a-zA-Z0-9_-] become "_", and "__"
// inside the server name becomes "_", so the first "__" separates the
// server. When either part had to change, or the result would be longer
// than 64 bytes (OpenAI's limit), the part is cut and a short hash of the
// original names is appended, so distinct (server, tool) pairs keep
// distinct names; the result is never longer than 64 bytes.
func QualifiedName(server, tool string) string {
	prefix := serverPrefix(server)
	part, changed := sanitize(tool)
	name := prefix + "__" + part
	if !changed && len(name) <= maxNameLen && part != "" {
		return name
	}
	// "_" + 8 hex digits identifies the original pair.
	suffix := "_" + shortHash(server+"\x00"+tool, 8)
	room := maxNameLen - len(prefix) - len("__") - len(suffix)
	part = strings.TrimRight(part[:min(len(part), room)], "_-")
	return prefix + "__" + part + suffix
}

// serverPrefix is the server's part of a qualified name.
func serverPrefix(server string) string {
	p, changed := sanitize(server)
	for strings.Contains(p, "__") {
		p = strings.ReplaceAll(p, "__", "_")
		changed = true
	}
	if p == "" || strings.HasSuffix(p, "_") {
		changed = true
	}
	if !changed && len(p) <= maxPrefixLen {
		return p
	}
	suffix := "-" + shortHash(server, 6)
	p = strings.TrimRight(p[:min(len(p), maxPrefixLen-len(suffix))], "_-")
	return p + suffix
}

// sanitize maps characters outside [a-zA-Z0-9_-] to "_" and reports whether
// it changed anything.
func sanitize(s string) (string, bool) {
	var b strings.Builder
	changed := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			changed = true
		}
	}
	return b.String(), changed
}

func shortHash(s string, n int) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:n]
}
