package config

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// The fields this package reads, in the order a suggestion prefers them
// when two are as close.
var (
	topLevelFields = []string{"mcpServers", "servers", "inputs", "$schema"}
	serverFields   = []string{"command", "args", "env", "envFile", "inheritEnv", "cwd", "url", "headers", "type", "transport",
		"timeout", "disabled", "allowedTools", "disabledTools", "protocolVersion", "alwaysLoad", "alwaysLoadTools", "oauth"}
	inputFields = []string{"id", "type", "description", "password", "default", "options"}
	oauthFields = []string{"clientId", "clientSecret", "clientMetadataUrl", "scopes", "callbackPort"}
)

// fieldAliases are the names other MCP clients and tools give a server
// field that toolsift spells differently, too far from it in spelling for
// a suggestion by edit distance.
var fieldAliases = map[string]string{
	"cmd":          "command",
	"arguments":    "args",
	"environment":  "env",
	"serverurl":    "url", // Windsurf
	"httpurl":      "url", // Gemini CLI
	"includetools": "allowedTools",
	"excludetools": "disabledTools",
}

// didYouMean is what follows the name of key, a field that is not among
// known, in a message: ` (did you mean "command"?)`, or "" when no known
// field is close.
func didYouMean(key string, known []string) string {
	if s := suggest(key, known); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// suggest returns the field of known that key was probably meant to be, or
// "". Case, '_' and '-' are ignored ("Command", "allowed_tools"). An alias
// other clients use ("cmd", "serverUrl") names its field; otherwise the
// nearest field by edit distance (a swap of two neighbours counts as one
// edit) within 1 + len/5 edits of it (1 for "url", 2 for "command", 3 for
// "allowedTools"), the first in known on a tie.
func suggest(key string, known []string) string {
	k := foldField(key)
	if k == "" {
		return ""
	}
	if a, ok := fieldAliases[k]; ok && slices.Contains(known, a) {
		return a
	}
	best, bestD := "", -1
	for _, f := range known {
		d := editDistance(k, foldField(f))
		if d <= 1+len(f)/5 && d < len(k) && (bestD < 0 || d < bestD) {
			best, bestD = f, d
		}
	}
	return best
}

// foldField lowercases s and drops '_' and '-'.
func foldField(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two adjacent bytes.
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
