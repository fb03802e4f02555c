package retrieval

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Tools named in a request come first. A person who writes "use get-sum",
// "call `mcp__everything__get-sum`" or "everything.get-sum" means that tool,
// whatever the signals make of the words around it; a keyword search for
// "ask_codex" must not miss "mcp__x__ask_codex". A word of the request
// names a tool when it is, ignoring case:
//   - the tool's name (Tool.Name: a hub's server__tool) or its upstream name
//     (Tool.OriginalName);
//   - server__tool, mcp__server__tool, server.tool or server/tool, with the
//     tool's server and upstream name.
//
// Identifier-shaped words (with _ - . / inside, or camelCase) are looked up
// as they are; a plain word ("echo") only when it is quoted ('echo', "echo",
// `echo`) or followed by "tool" ("the echo tool"), so that everyday words
// that happen to be a tool's name ("list", "query") do not pin it.

// maxNamedTools bounds the tools one request can name.
const maxNamedTools = 5

// names maps lowercased tool names and upstream names to the tools' names,
// for the tool index's current generation.
type names struct {
	mu   sync.Mutex
	gen  uint64
	ok   bool
	byID map[string][]string // name or upstream name → Tool.Name
	srv  map[string]string   // Tool.Name → its server, lowercased
}

// lookup returns the index's names for what key may name, updating the
// maps when the catalog changed.
func (r *Retriever) nameMaps() (map[string][]string, map[string]string) {
	n := r.names
	n.mu.Lock()
	defer n.mu.Unlock()
	if gen := r.ix.Generation(); !n.ok || n.gen != gen {
		n.byID, n.srv = map[string][]string{}, map[string]string{}
		for t := range r.ix.All() {
			add := func(k string) {
				k = strings.ToLower(k)
				if k != "" {
					n.byID[k] = append(n.byID[k], t.Name)
				}
			}
			add(t.Name)
			if t.OriginalName != "" && !strings.EqualFold(t.OriginalName, t.Name) {
				add(t.OriginalName)
			}
			n.srv[t.Name] = strings.ToLower(t.Server)
		}
		n.gen, n.ok = gen, true
	}
	return n.byID, n.srv
}

// named returns the tools that text names, in the order it names them.
func (r *Retriever) named(text string) []string {
	words := nameCandidates(text)
	if len(words) == 0 {
		return nil
	}
	byID, srv := r.nameMaps()
	var out []string
	seen := map[string]bool{}
	add := func(ns []string) {
		for _, n := range ns {
			if !seen[n] && len(out) < maxNamedTools && (r.servers == nil || r.servers[r.serverOf(n)]) {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	for _, w := range words {
		w = strings.ToLower(w)
		if ns, ok := byID[w]; ok {
			add(ns)
			continue
		}
		// mcp__server__tool, server__tool, server.tool, server/tool
		rest := strings.TrimPrefix(w, "mcp__")
		if ns, ok := byID[rest]; ok && rest != w {
			add(ns)
			continue
		}
		for _, sep := range []string{"__", ".", "/"} {
			server, tool, ok := strings.Cut(rest, sep)
			if !ok || server == "" || tool == "" {
				continue
			}
			var match []string
			for _, n := range byID[tool] {
				if srv[n] == server {
					match = append(match, n)
				}
			}
			if len(match) > 0 {
				add(match)
				break
			}
		}
	}
	return out
}

// serverOf returns the server of the tool named name ("" when unknown).
func (r *Retriever) serverOf(name string) string {
	t, _ := r.ix.Get(name)
	return t.Server
}

// nameCandidates returns the words of text that may name a tool: the
// identifier-shaped ones, and plain words that are quoted or followed by
// "tool".
func nameCandidates(text string) []string {
	fields := strings.Fields(text)
	var out []string
	for i, f := range fields {
		quoted := strings.ContainsAny(f[:1], "`'\"") && strings.ContainsAny(f[len(f)-1:], "`'\"")
		w := strings.TrimRight(strings.TrimFunc(f, func(r rune) bool {
			return strings.ContainsRune("`'\"()[]{}<>,;:!?*", r)
		}), ".")
		if w == "" {
			continue
		}
		next := ""
		if i+1 < len(fields) {
			next = strings.ToLower(strings.TrimRight(fields[i+1], ".,;:!?"))
		}
		if quoted || next == "tool" || identifierShaped(w) {
			out = append(out, w)
		}
	}
	return out
}

// identifierShaped reports whether w looks like a name in code: a
// separator (_ - . /) between letters or digits, or a lowercase letter
// followed by an uppercase one.
func identifierShaped(w string) bool {
	prev := rune(-1)
	for i, c := range w {
		if strings.ContainsRune("_-./", c) && prev != -1 && i+1 < len(w) {
			next, _ := utf8.DecodeRuneInString(w[i+1:])
			if (unicode.IsLetter(prev) || unicode.IsDigit(prev) || prev == '_') && (unicode.IsLetter(next) || unicode.IsDigit(next) || next == '_') {
				return true
			}
		}
		if unicode.IsLower(prev) && unicode.IsUpper(c) {
			return true
		}
		prev = c
	}
	return false
}

// namedFirst puts the tools that q's task or thought names first (score 1),
// in the order named, ahead of out (best first).
func (r *Retriever) namedFirst(text string, out []Match) []Match {
	ns := r.named(text)
	if len(ns) == 0 {
		return out
	}
	first := make([]Match, 0, len(ns))
	for _, n := range ns {
		m := Match{Score: 1}
		if i := indexMatch(out, n); i >= 0 {
			m = out[i]
			m.Score = 1
		} else if t, ok := r.ix.Get(n); ok {
			m.Tool = t
		} else {
			continue
		}
		first = append(first, m)
	}
	rest := make([]Match, 0, len(out))
	for _, m := range out {
		if indexMatch(first, m.Tool.Name) < 0 {
			rest = append(rest, m)
		}
	}
	return append(first, rest...)
}

func indexMatch(ms []Match, name string) int {
	for i, m := range ms {
		if m.Tool.Name == name {
			return i
		}
	}
	return -1
}
