package upstream

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// How a resource URI routes to one server, unambiguously (issue 35: a
// server whose name sorts first could shadow another's resource, and a
// resource link in a call result could capture reads meant for another
// server's template):
//
//   - a URI listed by one server is read from it, whatever links or
//     templates other servers have;
//   - a URI listed by several servers is listed by each under a namespaced
//     URI, toolsift:SERVER/URI (SERVER path-escaped), which reads URI from
//     SERVER; the bare URI is refused, naming the servers;
//   - a resource link or embedded resource in a call result whose URI
//     another server lists or templates is rewritten to the namespaced URI
//     of the server that sent it (in the result the proxy forwards and the
//     one the model reads), so that the link reads from its server and the
//     bare URI stays the other server's;
//   - templates that several servers list alike are listed by each under
//     its namespaced form;
//   - a URI nobody lists is read from the one server that linked or
//     embedded it in a call result or has a template that matches it; when
//     more than one server could answer it, it is refused, naming them
//     (their namespaced URIs read it from each).
//
// Under a scope (scope.go) all of this holds among the servers in scope:
// a URI that one of them lists is theirs, listed (Passthrough.Resources
// under that scope) and read under its plain URI, whatever servers out of
// scope list.

// ErrAmbiguousResource is wrapped by the error of ReadResource for a URI
// that several servers list, link or match with a template.
var ErrAmbiguousResource = errors.New("upstream: ambiguous resource")

// namespacePrefix starts a namespaced resource URI.
const namespacePrefix = "toolsift:"

// namespacedURI is the URI under which server's resource uri is listed
// when another server lists uri too.
func namespacedURI(server, uri string) string {
	return namespacePrefix + url.PathEscape(server) + "/" + uri
}

// parseNamespaced splits a namespaced URI into its server and the
// server's URI.
func parseNamespaced(uri string) (server, orig string, ok bool) {
	rest, ok := strings.CutPrefix(uri, namespacePrefix)
	if !ok {
		return "", "", false
	}
	esc, orig, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", false
	}
	server, err := url.PathUnescape(esc)
	return server, orig, err == nil
}

// listers returns the servers (offering tools, in order, in scope) that
// list uri. h.mu is held.
func (p *Passthrough) listers(uri string, in func(string) bool) []*server {
	h := p.h
	var out []*server
	for _, s := range h.order {
		if s.offersTools() && in(s.name) && slices.ContainsFunc(s.feat.resources, func(r Resource) bool { return r.URI == uri }) {
			out = append(out, s)
		}
	}
	return out
}

// resourceServer finds the server to read uri from, and the URI to ask it
// for, by the rules above, among the servers in scope (scope.go: the
// others are as absent). h.mu is held.
func (p *Passthrough) resourceServer(uri string, in func(string) bool) (*server, string, error) {
	h := p.h
	if name, orig, ok := parseNamespaced(uri); ok {
		if s, ok := h.servers[name]; ok && s.offersTools() && in(s.name) {
			_, linked := s.feat.seen[orig]
			if linked || templated(s, orig) || slices.Contains(p.listers(orig, in), s) {
				return s, orig, nil
			}
		}
	}
	switch l := p.listers(uri, in); len(l) {
	case 0:
	case 1:
		return l[0], uri, nil
	default:
		return nil, "", fmt.Errorf("%w: %q is listed by servers %s: read it by the URI each lists it under (%s)", ErrAmbiguousResource, uri, serverNames(l), namespacedURI(l[0].name, uri))
	}
	var can []*server
	for _, s := range h.order {
		if !s.offersTools() || !in(s.name) {
			continue
		}
		if s.feat.seen[uri] || templated(s, uri) { // seen: a link left bare
			can = append(can, s)
		}
	}
	switch len(can) {
	case 0:
		return nil, "", fmt.Errorf("%w: %q: no server lists it, links it or has a template that matches it", ErrUnknownResource, uri)
	case 1:
		return can[0], uri, nil
	}
	return nil, "", fmt.Errorf("%w: %q could be read from servers %s (a resource link or template of each matches it): refused rather than guessed", ErrAmbiguousResource, uri, serverNames(can))
}

func serverNames(ss []*server) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.name
	}
	return strings.Join(names, " and ")
}

// namespaced gives the items whose URI (or URI template: uri picks the
// field) several servers list alike their namespaced form,
// toolsift:SERVER/URI; the others keep theirs.
func namespaced[T any](items []T, uri func(*T) *string, server func(T) string) []T {
	count := map[string]int{}
	for i := range items {
		count[*uri(&items[i])]++
	}
	out := slices.Clone(items)
	for i := range out {
		if u := uri(&out[i]); count[*u] > 1 {
			*u = namespacedURI(server(out[i]), *u)
		}
	}
	return out
}

// templated reports whether a template of s matches uri. h.mu is held.
func templated(s *server, uri string) bool {
	return slices.ContainsFunc(s.feat.matchers, func(m *uritemplate.Template) bool { return m != nil && m.Match(uri) != nil })
}

// noteLinks remembers the URIs of the resource links and embedded
// resources in a call result of s, so that ReadResource routes them to s,
// and rewrites those that another server lists, templates or linked to
// s's namespaced URI (in res itself, before it is rendered): a link must
// not capture the reads of another server's URI.
func (p *Passthrough) noteLinks(s *server, res *mcp.CallToolResult) {
	h := p.h
	var uris []*string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ResourceLink:
			uris = append(uris, &c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				uris = append(uris, &c.Resource.URI)
			}
		}
	}
	if len(uris) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.feat.seen == nil || len(s.feat.seen)+len(uris) > maxSeenURIs {
		s.feat.seen = map[string]bool{}
	}
	for _, u := range uris {
		if *u == "" {
			continue
		}
		if _, _, ok := parseNamespaced(*u); ok {
			continue // already names its server
		}
		bare := !p.claimedByOther(s, *u)
		s.feat.seen[*u] = bare
		if !bare {
			*u = namespacedURI(s.name, *u)
		}
	}
}

// claimedByOther reports whether a server other than s lists uri, has a
// template that matches it, or linked it bare. h.mu is held.
func (p *Passthrough) claimedByOther(s *server, uri string) bool {
	h := p.h
	for _, o := range h.order {
		if o == s || !o.offersTools() {
			continue
		}
		if o.feat.seen[uri] || templated(o, uri) || slices.ContainsFunc(o.feat.resources, func(r Resource) bool { return r.URI == uri }) {
			return true
		}
	}
	return false
}
