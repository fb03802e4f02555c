package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/upstream"
)

// Resources, resource templates and prompts of every upstream server are
// served too: the same for every session, registered on each session's
// server (so the SDK answers the lists, matches template URIs and sends
// list_changed in every protocol revision), read and got through the Hub,
// which routes by URI and qualified prompt name. Their results pass
// through as the server sent them.

// sessionGrace is how long a session's server may go without a connected
// session before featuresChanged forgets it: the HTTP handler makes a server
// before the session it is for exists.
const sessionGrace = time.Minute

// featureSet is what a session's server has registered.
type featureSet struct {
	resources map[string]string // URI → the Raw it was made from
	templates map[string]string
	prompts   map[string]string
}

// track remembers a session's server so that featuresChanged reaches it.
func (p *proxy) track(s *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prune()
	p.sessions[s] = time.Now()
}

// keep makes the session of srv, a server for the handler's life (the
// stateless one, whose sessions are requests), reached by every change
// even while no request is in flight: prune leaves it.
func (p *proxy) keep(srv *mcp.Server) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.sessions {
		if s.srv == srv {
			p.sessions[s] = time.Time{}
		}
	}
}

// prune forgets the servers whose sessions are over. p.mu is held.
func (p *proxy) prune() {
	for s, since := range p.sessions {
		if since.IsZero() || time.Since(since) < p.grace { // kept, or new
			continue
		}
		live := false
		for range s.srv.Sessions() {
			live = true
			break
		}
		if !live {
			delete(p.sessions, s)
		}
	}
}

// featuresChanged brings every session's resources, resource templates and
// prompts up to date with the Hub's; the SDK tells the clients
// (notifications/resources/list_changed, notifications/prompts/list_changed).
// Open gives it to upstream.HubOptions.OnListChange.
func (p *proxy) featuresChanged() {
	for _, s := range p.liveSessions() {
		s.syncFeatures()
	}
}

// liveSessions returns the sessions still connected, dropping the ended
// ones; the caller works on them without holding p.mu.
func (p *proxy) liveSessions() []*session {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prune()
	sessions := make([]*session, 0, len(p.sessions))
	for s := range p.sessions {
		sessions = append(sessions, s)
	}
	return sessions
}

// syncFeatures registers what the Hub offers now on the session's server
// and removes what it no longer offers; a session of one caller under a
// policy registers only its scope's servers' (policy.go), so that neither
// their lists nor their changes reach it.
func (s *session) syncFeatures() {
	pt := s.p.hub.Passthrough()
	ctx := context.Background() // every server's, or the scope's
	if a := s.access(); a != nil {
		ctx = upstream.WithServerScope(ctx, a.sc.server)
	}
	s.featMu.Lock()
	defer s.featMu.Unlock()
	if s.feat.resources == nil {
		s.feat = featureSet{resources: map[string]string{}, templates: map[string]string{}, prompts: map[string]string{}}
	}
	log := s.p.log

	now := map[string]bool{}
	// A per-user server's resources and prompts are not served: the
	// shared Hub lists them with one user's login (docs/serve.md).
	// Namespaced over the scope's servers only (upstream.Passthrough.Resources
	// under the scope): a URI that one server in scope lists is served
	// under its plain URI.
	for _, r := range pt.Resources(ctx) {
		if s.p.perUser.has(r.Server) || now[r.URI] {
			continue // the Hub reads it from the first server that lists it
		}
		now[r.URI] = true
		if s.feat.resources[r.URI] == r.Name+string(r.Raw) {
			continue
		}
		var sr mcp.Resource
		if err := json.Unmarshal(r.Raw, &sr); err != nil || !absoluteURI(r.URI) {
			log.Debug("resource not served", "server", r.Server, "uri", r.URI, "error", err)
			continue
		}
		sr.URI, sr.Name = r.URI, r.Name
		sr.Title, sr.Description = text(sr.Title), text(sr.Description) // sanitize.go
		if err := catch(func() { s.srv.AddResource(&sr, s.readResource) }); err != nil {
			log.Warn("resource not served", "server", r.Server, "uri", r.URI, "error", err)
			continue
		}
		s.feat.resources[r.URI] = r.Name + string(r.Raw)
	}
	var gone []string
	for uri := range s.feat.resources {
		if !now[uri] {
			gone = append(gone, uri)
			delete(s.feat.resources, uri)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveResources(gone...)
	}

	clear(now)
	for _, t := range pt.ResourceTemplates(ctx) {
		if s.p.perUser.has(t.Server) || now[t.URITemplate] {
			continue
		}
		now[t.URITemplate] = true
		if s.feat.templates[t.URITemplate] == t.Name+string(t.Raw) {
			continue
		}
		var st mcp.ResourceTemplate
		if err := json.Unmarshal(t.Raw, &st); err != nil {
			continue
		}
		st.URITemplate, st.Name = t.URITemplate, t.Name
		st.Title, st.Description = text(st.Title), text(st.Description)
		if err := catch(func() { s.srv.AddResourceTemplate(&st, s.readResource) }); err != nil {
			log.Warn("resource template not served", "server", t.Server, "template", t.URITemplate, "error", err)
			continue
		}
		s.feat.templates[t.URITemplate] = t.Name + string(t.Raw)
	}
	gone = gone[:0]
	for u := range s.feat.templates {
		if !now[u] {
			gone = append(gone, u)
			delete(s.feat.templates, u)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveResourceTemplates(gone...)
	}

	clear(now)
	for _, pr := range pt.Prompts(ctx) {
		if s.p.perUser.has(pr.Server) {
			continue
		}
		now[pr.Name] = true
		if s.feat.prompts[pr.Name] == string(pr.Raw) {
			continue
		}
		sp, ok := servedPrompt(pr)
		if !ok {
			continue
		}
		if err := catch(func() { s.srv.AddPrompt(sp, s.getPrompt) }); err != nil {
			log.Warn("prompt not served", "server", pr.Server, "prompt", pr.Name, "error", err)
			continue
		}
		s.feat.prompts[pr.Name] = string(pr.Raw)
	}
	gone = gone[:0]
	for n := range s.feat.prompts {
		if !now[n] {
			gone = append(gone, n)
			delete(s.feat.prompts, n)
		}
	}
	if len(gone) > 0 {
		s.srv.RemovePrompts(gone...)
	}
}

// servedPrompt is the prompt the session's servers register for pr, as
// the upstream listed it (pr.Raw) with its name and texts made safe; false
// when it is not served.
func servedPrompt(pr upstream.Prompt) (*mcp.Prompt, bool) {
	var sp mcp.Prompt
	if err := json.Unmarshal(pr.Raw, &sp); err != nil || !validName.MatchString(pr.Name) {
		return nil, false
	}
	sp.Name = pr.Name
	sp.Title, sp.Description = text(sp.Title), text(sp.Description)
	for _, a := range sp.Arguments {
		a.Title, a.Description = text(a.Title), text(a.Description)
	}
	return &sp, true
}

// readResource reads a resource (listed, or matching a template) through
// the Hub.
func (s *session) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	start := time.Now()
	raw, err := s.p.hub.Passthrough().ReadResource(withSession(ctx, req.Session), req.Params.URI)
	s.p.logger(ctx, req.Session).Info("read resource", withError([]any{"uri", req.Params.URI, "duration", time.Since(start)}, err)...)
	if err != nil {
		return nil, err
	}
	var res mcp.ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("read %s: the server's result: %w", req.Params.URI, err)
	}
	return &res, nil
}

// getPrompt gets a prompt through the Hub.
func (s *session) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	start := time.Now()
	ctx = withPromptRound(ctx, req) // roundtrip.go
	raw, err := s.p.hub.Passthrough().GetPrompt(withSession(ctx, req.Session), req.Params.Name, req.Params.Arguments)
	s.p.logger(ctx, req.Session).Info("get prompt", withError([]any{"prompt", req.Params.Name, "duration", time.Since(start)}, err)...)
	if rpc := roundError(ctx, err); rpc != nil {
		return nil, rpc
	}
	if err != nil {
		return nil, err
	}
	var res mcp.GetPromptResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("get prompt %s: the server's result: %w", req.Params.Name, err)
	}
	return &res, nil
}

// absoluteURI reports whether the SDK accepts uri for a resource.
func absoluteURI(uri string) bool {
	u, err := url.Parse(uri)
	return err == nil && u.Scheme != ""
}

// catch turns the SDK's panic on a feature it refuses into an error.
func catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}
