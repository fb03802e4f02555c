package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// perUser is Options.PerUser as the proxy consults it; nil without one.
type perUser struct {
	pu      PerUser
	servers map[string]bool
}

// pending takes the per-user servers nobody has logged in to yet out of
// failed (the shared Hub could not list them), as the servers whose tools
// join at the first login, with the page to log in at: a search_tools
// answer names them so (think.Incomplete.Login). failed stays as it is
// without a PerUser that is a LoginPender.
func (pu *perUser) pending(ctx context.Context, failed []string) (still []string, login []think.Login) {
	lp, ok := pu.pender()
	if !ok {
		return failed, nil
	}
	for _, server := range failed {
		if pu.servers[server] {
			if url, pending := lp.LoginPending(ctx, server); pending {
				login = append(login, think.Login{Server: server, URL: url})
				continue
			}
		}
		still = append(still, server)
	}
	return still, login
}

func (pu *perUser) pender() (LoginPender, bool) {
	if pu == nil {
		return nil, false
	}
	lp, ok := pu.pu.(LoginPender)
	return lp, ok
}

// newPerUser checks that pu's servers are url servers of cfg; nil pu
// gives nil.
func newPerUser(pu PerUser, cfg *config.Config) (*perUser, error) {
	if pu == nil {
		return nil, nil
	}
	p := &perUser{pu: pu, servers: map[string]bool{}}
	for _, name := range pu.Servers() {
		if sc, ok := cfg.Servers[name]; !ok || sc.URL == "" {
			return nil, fmt.Errorf("%w: PerUser names server %q, which is no url server of the config", ErrOptions, name)
		}
		p.servers[name] = true
	}
	return p, nil
}

func (pu *perUser) has(server string) bool {
	return pu != nil && pu.servers[server]
}

// serverOf returns the per-user server a tool name belongs to by its
// qualified prefix (for a name not in the catalog yet), "" when none.
func (pu *perUser) serverOf(name string) string {
	if pu == nil {
		return ""
	}
	for s := range pu.servers {
		if strings.HasPrefix(name, s+"__") {
			return s
		}
	}
	return ""
}

// call calls the tool name of the per-user server server as id's user,
// on the user's own session with the user's own token.
func (pu *perUser) call(ctx context.Context, id authn.Identity, server, name string, args json.RawMessage) (tool.Result, error) {
	return pu.pu.Call(ctx, id.User, server, name, args)
}

// close closes every user's session.
func (pu *perUser) close() error {
	if pu == nil {
		return nil
	}
	return pu.pu.Close()
}

// featureServer returns the per-user server that offers the prompt or
// the resource (by URI or URI template) a client names, "" when none:
// completions and subscriptions of those would go through the shared
// Hub's session, which is the first user's login, so they are refused.
func (pu *perUser) featureServer(pt *upstream.Passthrough, prompt, uri string) string {
	if pu == nil {
		return ""
	}
	every := context.Background() // every server's lists, whatever the caller's scope
	if prompt != "" {
		for _, p := range pt.Prompts(every) {
			if p.Name == prompt && pu.has(p.Server) {
				return p.Server
			}
		}
		return ""
	}
	if rest, ok := strings.CutPrefix(uri, "toolsift:"); ok {
		if srv, _, ok := strings.Cut(rest, "/"); ok && pu.has(srv) {
			return srv
		}
	}
	for _, r := range pt.Resources(every) {
		if r.URI == uri && pu.has(r.Server) {
			return r.Server
		}
	}
	for _, t := range pt.ResourceTemplates(every) {
		if t.URITemplate == uri && pu.has(t.Server) {
			return t.Server
		}
	}
	return ""
}

// errPerUserFeature is the refusal of a per-user server's prompt or
// resource.
func errPerUserFeature(server string) error {
	return fmt.Errorf("server %q is reached with each user's own login: its resources and prompts are not served through this gateway", server)
}
