package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// PerUser reaches the servers each user calls with the user's own OAuth
// login (Options.PerUser; peruser.Logins is the one implementation, with
// the login pages and the sealed store of the logins): the Gateway routes
// the calls of their tools to it, and keeps their resources, prompts,
// completions and subscriptions, which would be one user's, from every
// client. Its methods are called concurrently, Attach first.
type PerUser interface {
	// Servers names the per-user servers: url servers of the config.
	Servers() []string
	// Attach is called once, by Open, before the shared Hub connects:
	// hub are that Hub's options, hooks and client requests set, which
	// each user's Hub starts from; the Authorizer it returns takes the
	// place of hub.Auth (the per-user servers listed for the catalog with
	// one user's login, the others given hub.Auth's tokens). shared
	// returns the shared Hub once it is open, nil before.
	Attach(hub upstream.HubOptions, shared func() *upstream.Hub) (upstream.Authorizer, error)
	// Call calls the tool name of server as user ("" when the request
	// names nobody), on the user's own session: an error wrapping
	// ErrLoginNeeded, whose text says where to log in, when the user has
	// no usable login.
	Call(ctx context.Context, user, server, name string, args json.RawMessage) (tool.Result, error)
	// Close ends the users' sessions; Close calls it.
	Close() error
}

// ErrLoginNeeded is wrapped by the error of a per-user server's call
// (PerUser.Call) that needs the caller to log in first: the call's
// outcome is login-needed, and its text reaches the client as the
// result.
var ErrLoginNeeded = errors.New("gateway: the caller's own login is needed")

// perUser is Options.PerUser as the proxy consults it; nil without one.
type perUser struct {
	pu      PerUser
	servers map[string]bool
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
func (pu *perUser) featureServer(hub *upstream.Hub, prompt, uri string) string {
	if pu == nil {
		return ""
	}
	if prompt != "" {
		for _, p := range hub.Prompts() {
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
	for _, r := range hub.Resources() {
		if r.URI == uri && pu.has(r.Server) {
			return r.Server
		}
	}
	for _, t := range hub.ResourceTemplates() {
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
