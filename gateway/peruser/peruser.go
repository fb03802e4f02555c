package peruser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// Options configure New. Servers, Store, LoginKey and PublicURL are
// required.
type Options struct {
	// Servers names the url servers of the config that each user reaches
	// with the user's own OAuth login: a user's calls of their tools go out
	// on a session of the user's own with the user's token, never
	// another's; a user without a login gets a result naming
	// PublicURL/login/SERVER. Their tools are in the catalog once the first
	// user logged in (that login lists them). A setting of the gateway, not
	// of the config file: the config files are the users' own mcp.json,
	// and who may use whose login is the gateway's to decide.
	Servers []string
	// Store keeps the logins, sealed, and the logins under way. Replicas
	// that share it share the logins (a refresh happens once, under its
	// Lock). The caller closes it, after the Gateway.
	Store store.Store
	// LoginKey is the AES-256 key (LoginKeySize bytes) the logins are
	// sealed with; it is never stored. A store holding records sealed with
	// another key is refused (an error wrapping ErrLoginKey that names
	// both key ids), and those records are never overwritten.
	LoginKey []byte
	// PublicURL is the gateway's base URL as users' browsers reach it
	// (https://gateway.example.com): Handler serves PublicURL/login/SERVER
	// and PublicURL/oauth/callback, the redirect URI registered with the
	// authorization servers.
	PublicURL string
	// Logger gets the logins' comings and goings and each user's Hub's
	// lines (never a token); nil discards them.
	Logger *slog.Logger
}

// Logins are the per-user servers of a gateway and their users' logins
// (gateway.Options.PerUser): each user's calls go out on a session of
// the user's own, opened with the user's own login (a Hub of one server
// per user and server, started at the user's first call, its session
// stopped when idle as the shared Hub's servers are). The shared Hub
// keeps the server in the catalog, listed with one login (catalogAuth),
// and never carries a call. Handler serves the login pages. A Logins
// serves one Gateway; it is safe for concurrent use.
type Logins struct {
	servers map[string]config.Server // per-user server name → its config
	logins  *userLogins
	log     *slog.Logger

	// Set by Attach, before the Gateway serves.
	hubOpts upstream.HubOptions                         // of each user's Hub
	shared  func() *upstream.Hub                        // the shared Hub, once open: Retry after a first login
	inScope func(id authn.Identity, server string) bool // the Gateway's policy: who may log in to what

	mu      sync.Mutex
	closed  bool
	hubs    map[[2]string]*userHub // (user, server)
	retried map[string]time.Time   // server → when listCatalogAgain last looked
	tickets map[[2]string]madeTicket

	handlerOnce sync.Once
	handler     http.Handler
}

var (
	_ gateway.PerUser     = (*Logins)(nil)
	_ gateway.LoginPender = (*Logins)(nil)
)

// New checks opts against cfg (the config the Gateway serves) and returns
// its per-user servers, not connected: gateway.Open attaches them to the
// shared Hub. Invalid options are an error wrapping gateway.ErrOptions
// that names the one at fault; a store that holds logins sealed with
// another key is refused (ErrLoginKey), before anything connects.
func New(ctx context.Context, cfg *config.Config, opts *Options) (*Logins, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case len(o.Servers) == 0:
		return nil, fmt.Errorf("%w: peruser: Options.Servers names no server", gateway.ErrOptions)
	case o.Store == nil:
		return nil, fmt.Errorf("%w: peruser: Options.Servers needs a Store for the logins (Options.Store)", gateway.ErrOptions)
	case len(o.LoginKey) == 0:
		return nil, fmt.Errorf("%w: peruser: Options.Servers needs a LoginKey to seal the logins with (toolsift serve --login-key-file, $TOOLSIFT_LOGIN_KEY)", gateway.ErrOptions)
	case o.PublicURL == "":
		return nil, fmt.Errorf("%w: peruser: Options.Servers needs the PublicURL users' browsers reach the gateway at (toolsift serve --public-url): the login pages and the OAuth callback are under it", gateway.ErrOptions)
	}
	base, err := url.Parse(o.PublicURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" || base.RawQuery != "" || base.Fragment != "" || base.User != nil {
		return nil, fmt.Errorf("%w: peruser: PublicURL %q: want http(s)://host[:port][/path], without query, fragment or user", gateway.ErrOptions, o.PublicURL)
	}
	seal, err := newSealer(o.LoginKey)
	if err != nil {
		return nil, err
	}
	pu := &Logins{servers: map[string]config.Server{}, log: o.Logger, hubs: map[[2]string]*userHub{}, retried: map[string]time.Time{},
		tickets: map[[2]string]madeTicket{}, shared: func() *upstream.Hub { return nil },
		inScope: func(authn.Identity, string) bool { return false }}
	if pu.log == nil {
		pu.log = slog.New(slog.DiscardHandler)
	}
	for _, name := range o.Servers {
		sc, ok := cfg.Servers[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: peruser: Servers names server %q, which the config does not have", gateway.ErrOptions, name)
		case sc.URL == "":
			return nil, fmt.Errorf("%w: peruser: Servers names server %q, which is not a url server: only remote servers have logins", gateway.ErrOptions, name)
		case hasAuthorization(sc.Headers):
			return nil, fmt.Errorf("%w: peruser: Servers names server %q, whose config sets an Authorization header: one credential for everyone is not a per-user login", gateway.ErrOptions, name)
		case !validName.MatchString(name):
			return nil, fmt.Errorf("%w: peruser: Servers names server %q: per-user server names are letters, digits, '-' and '_' (they are in the login URL)", gateway.ErrOptions, name)
		}
		pu.servers[name] = sc
	}
	// The flows' HTTP client is the shared Hub's (Attach); the
	// oauth.Store's own logins are not used (the per-user ones are
	// userLogins', sealed).
	flows, err := oauth.New(&oauth.Options{Store: store.NewMemory()})
	if err != nil {
		return nil, err
	}
	pu.logins = &userLogins{st: o.Store, seal: seal, oauth: flows, base: strings.TrimSuffix(base.String(), "/"), found: map[[2]string]string{}}
	if err := pu.logins.checkKey(ctx); err != nil {
		return nil, err
	}
	return pu, nil
}

// validName is the rule of a listed name, which a per-user server's is
// part of (gateway's rule: Claude Desktop rejects others).
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Servers returns the names of the per-user servers, sorted.
func (pu *Logins) Servers() []string {
	return slices.Sorted(maps.Keys(pu.servers))
}

// Attach takes the shared Hub's options, once, before that Hub connects
// (gateway.PerUser): each user's Hub starts from them (their limits,
// timeouts, HTTP client and client requests), with an Authorizer of its
// own, no cache and none of the hooks, the catalog being the shared
// Hub's. The Authorizer it returns is the shared Hub's: a per-user server
// is listed for the catalog with one user's login (the first), every
// other server gets hub.Auth's tokens. shared returns the shared Hub once
// it is open (nil before): a login through this replica then lists a
// server that failed there for want of one. inScope is the Gateway's
// policy: a user it keeps from a server gets no login link, no login page
// and no login (they answer as for a server that does not log in per
// user), so never lists the server's tools for the catalog. Until Attach,
// nobody may log in.
func (pu *Logins) Attach(hub upstream.HubOptions, shared func() *upstream.Hub, inScope func(id authn.Identity, server string) bool) (upstream.Authorizer, error) {
	if hub.HTTPClient != nil {
		flows, err := oauth.New(&oauth.Options{Store: store.NewMemory(), HTTPClient: hub.HTTPClient})
		if err != nil {
			return nil, err
		}
		pu.logins.oauth = flows
	}
	if shared != nil {
		pu.shared = shared
	}
	if inScope != nil {
		pu.inScope = inScope
	}
	h := hub
	h.Auth, h.Store, h.Background = nil, store.NewMemory(), false
	h.OnListChange, h.OnResourceUpdated, h.Progress = nil, nil, nil
	h.Logger = pu.log
	pu.hubOpts = h
	return &catalogAuth{next: hub.Auth, pu: pu, sent: map[string]string{}}, nil
}

// LoginPending reports whether nobody has logged in to the per-user
// server yet (gateway.LoginPender): its tools are not in the catalog and
// join it at the first login, at url. A server that is not one of pu's,
// or whose catalog login cannot be read, is not pending.
func (pu *Logins) LoginPending(ctx context.Context, server string) (url string, pending bool) {
	sc, ok := pu.servers[server]
	if !ok {
		return "", false
	}
	key, err := pu.logins.catalogLogin(ctx, sc.URL)
	if err != nil || key != "" {
		return "", false
	}
	return pu.logins.loginURL(server), true
}

func (pu *Logins) has(server string) bool {
	_, ok := pu.servers[server]
	return ok
}

// retryEvery spaces the catalog's retries of a per-user server that
// failed in the shared Hub.
const retryEvery = time.Minute

// listCatalogAgain starts server again in the shared Hub when it failed
// there, at most once a minute: a replica that started before anyone
// logged in (the login went through another replica) lists the server's
// tools at the first call that shows a login exists. Over a store.Watcher
// the shared Hub has done so already, when it heard of the other
// replica's listing (upstream's catalog watch): this is for stores
// without a watch, and a listing that failed there. When the catalog's
// login is gone (expired or revoked), the caller's (user's) takes its
// place.
func (pu *Logins) listCatalogAgain(ctx context.Context, server, serverURL, user string) {
	hub := pu.shared()
	if hub == nil {
		return
	}
	// The shared Hub's status is looked at once a minute, not per call.
	pu.mu.Lock()
	due := time.Since(pu.retried[server]) >= retryEvery
	if due {
		pu.retried[server] = time.Now()
	}
	pu.mu.Unlock()
	if !due {
		return
	}
	failed := false
	for _, st := range hub.Status() {
		failed = failed || st.Name == server && st.State == upstream.StateFailed
	}
	if !failed {
		return
	}
	key, err := pu.logins.find(ctx, user, serverURL)
	if err != nil || key == "" {
		return
	}
	if err := pu.logins.replaceCatalogLogin(ctx, serverURL, key); err != nil {
		pu.log.Warn("catalog login not set", "server", server, "error", err)
	}
	if err := hub.Retry(ctx, server); err != nil {
		pu.log.Warn("per-user server not listed", "server", server, "error", err)
	} else {
		pu.log.Info("per-user server listed", "server", server)
	}
}

// hubIdle is how long a user's Hub of a per-user server is kept unused
// (its session stopped after the Hub's IdleTimeout already).
const hubIdle = time.Hour

// userHub is one user's Hub of one per-user server.
type userHub struct {
	mu   sync.Mutex    // one connection at a time
	hub  *upstream.Hub // nil until connected
	auth *userAuth

	// calls in progress and when it was last used: guarded by Logins.mu.
	calls int
	used  time.Time
}

// Call calls the tool name of the per-user server server as user, on the
// user's own session with the user's own token (the session made at the
// user's first call). A user without a login, or whose login expired or
// was revoked, gets an error wrapping gateway.ErrLoginNeeded whose text
// names the page that logs in (with a ticket for that user: the log
// value of the error leaves it out); a request that names no user, an
// error saying the gateway needs an authentication that names its users.
func (pu *Logins) Call(ctx context.Context, user, server, name string, args json.RawMessage) (tool.Result, error) {
	sc, ok := pu.servers[server]
	id := callerOf(ctx, user)
	switch {
	case !ok:
		return tool.Result{}, fmt.Errorf("%w: server %q is not reached with each user's own login here", tool.ErrUnknown, server)
	case user == "":
		return tool.Result{}, fmt.Errorf("server %q is reached with each user's own login, and this request names no user: the gateway needs an authentication in front of it that names its users", server)
	case !pu.inScope(id, server):
		// The Gateway answers such a call before it comes here; a user
		// out of the server's scope is offered no login all the same.
		return tool.Result{}, fmt.Errorf("%w: %q", tool.ErrUnknown, name)
	}
	uh, done, err := pu.userHub(user, server)
	if err != nil {
		return tool.Result{}, err
	}
	defer done()
	if !uh.connected() {
		// A user who never logged in is told so before anything connects.
		key, err := pu.logins.find(ctx, user, sc.URL)
		if err != nil {
			return tool.Result{}, err
		}
		if key == "" {
			return tool.Result{}, &needLogin{server: server, reason: "not logged in", url: pu.ticketURL(ctx, id, server)}
		}
	}
	hub, err := uh.connect(ctx, pu, server, sc)
	if nl, ok := errors.AsType[*needLogin](err); ok {
		return tool.Result{}, &needLogin{server: nl.server, reason: nl.reason, url: pu.ticketURL(ctx, id, server)}
	}
	if err != nil {
		return tool.Result{}, err
	}
	res, err := hub.Call(ctx, name, args)
	if err != nil {
		if nl := uh.auth.loginNeeded(); nl != nil {
			// The login went bad under the session: a new one is needed,
			// and a new session with it.
			pu.drop(user, server, uh)
			return tool.Result{}, &needLogin{server: nl.server, reason: nl.reason, url: pu.ticketURL(ctx, id, server)}
		}
		return res, err
	}
	pu.listCatalogAgain(ctx, server, sc.URL, user)
	return res, nil
}

// callerOf is the Identity of the caller user, as ctx carries it
// (authn.IdentityFrom: its teams) when it is that user's.
func callerOf(ctx context.Context, user string) authn.Identity {
	if id, ok := authn.IdentityFrom(ctx); ok && id.User == user {
		return id
	}
	return authn.Identity{User: user}
}

// userHub returns (user, server)'s Hub, made when it has none, counted as
// in use until done is called. Making one first closes the Hubs nobody
// used for hubIdle, so that users who come and go leave nothing behind.
func (pu *Logins) userHub(user, server string) (uh *userHub, done func(), err error) {
	pu.mu.Lock()
	if pu.closed {
		pu.mu.Unlock()
		return nil, nil, upstream.ErrClosed
	}
	k := [2]string{user, server}
	uh = pu.hubs[k]
	var idle []*userHub
	if uh == nil {
		for k, o := range pu.hubs {
			if o.calls == 0 && time.Since(o.used) > hubIdle {
				idle = append(idle, o)
				delete(pu.hubs, k)
			}
		}
		uh = &userHub{auth: &userAuth{l: pu.logins, user: user}}
		pu.hubs[k] = uh
	}
	uh.calls++
	uh.used = time.Now()
	pu.mu.Unlock()
	for _, o := range idle {
		o.close()
	}
	return uh, func() {
		pu.mu.Lock()
		uh.calls--
		uh.used = time.Now()
		pu.mu.Unlock()
	}, nil
}

// connected reports whether uh has a Hub (its session may be idle).
func (uh *userHub) connected() bool {
	uh.mu.Lock()
	defer uh.mu.Unlock()
	return uh.hub != nil
}

// close closes uh's Hub, if it has one.
func (uh *userHub) close() error {
	uh.mu.Lock()
	defer uh.mu.Unlock()
	if uh.hub == nil {
		return nil
	}
	err := uh.hub.Close()
	uh.hub = nil
	return err
}

// connect returns uh's Hub, connecting it first (its server started and
// listed) when it has none.
func (uh *userHub) connect(ctx context.Context, pu *Logins, server string, sc config.Server) (*upstream.Hub, error) {
	uh.mu.Lock()
	defer uh.mu.Unlock()
	if uh.hub != nil {
		return uh.hub, nil
	}
	opts := pu.hubOpts
	opts.Auth = uh.auth
	hub, err := upstream.NewHub(&config.Config{Servers: map[string]config.Server{server: sc}}, &opts)
	if err != nil {
		return nil, err
	}
	if err := hub.Connect(ctx, nil); err != nil {
		return nil, errors.Join(err, hub.Close())
	}
	for _, st := range hub.Status() {
		if st.State == upstream.StateFailed {
			err := st.Err
			if nl := uh.auth.loginNeeded(); nl != nil {
				err = nl
			}
			return nil, errors.Join(err, hub.Close())
		}
	}
	pu.mu.Lock()
	closed := pu.closed
	pu.mu.Unlock()
	if closed {
		return nil, errors.Join(upstream.ErrClosed, hub.Close())
	}
	uh.hub = hub
	return hub, nil
}

// drop forgets uh (when it is still (user, server)'s) and closes its Hub.
func (pu *Logins) drop(user, server string, uh *userHub) {
	pu.mu.Lock()
	k := [2]string{user, server}
	if pu.hubs[k] == uh {
		delete(pu.hubs, k)
	}
	pu.mu.Unlock()
	_ = uh.close()
}

// Close closes every user's Hub; a call after it fails with
// upstream.ErrClosed.
func (pu *Logins) Close() error {
	pu.mu.Lock()
	pu.closed = true
	hubs := slices.Collect(func(yield func(*userHub) bool) {
		for _, uh := range pu.hubs {
			if !yield(uh) {
				return
			}
		}
	})
	clear(pu.hubs)
	pu.mu.Unlock()
	var errs []error
	for _, uh := range hubs {
		errs = append(errs, uh.close())
	}
	return errors.Join(errs...)
}

// catalogAuth is the shared Hub's Authorizer: a per-user server is
// listed for the catalog with the login catalogLogin names (the first
// user's); every other server gets what next gives (the configured
// Authorizer, if any).
type catalogAuth struct {
	next upstream.Authorizer
	pu   *Logins
	mu   sync.Mutex
	sent map[string]string // server → the token last refreshed after a refusal
}

func (a *catalogAuth) Token(ctx context.Context, server, serverURL string) (string, error) {
	if !a.pu.has(server) {
		if a.next == nil {
			return "", nil
		}
		return a.next.Token(ctx, server, serverURL)
	}
	key, err := a.pu.logins.catalogLogin(ctx, serverURL)
	if err != nil {
		return "", err
	}
	if key == "" {
		return "", fmt.Errorf("per-user server %q: nobody has logged in yet; its tools join the catalog at the first login (%s)", server, a.pu.logins.loginURL(server))
	}
	return a.pu.logins.token(ctx, key, server, "")
}

func (a *catalogAuth) Unauthorized(ctx context.Context, server, serverURL string, resp *http.Response) error {
	if !a.pu.has(server) {
		if a.next == nil {
			return fmt.Errorf("server %q asks for a login (HTTP %d)", server, resp.StatusCode)
		}
		return a.next.Unauthorized(ctx, server, serverURL, resp)
	}
	if resp.StatusCode == http.StatusForbidden {
		return fmt.Errorf("per-user server %q refuses the catalog's login (HTTP %d): it needs more scopes", server, resp.StatusCode)
	}
	sent := bearerOf(resp.Request)
	a.mu.Lock()
	again := sent != "" && a.sent[server] == sent
	a.mu.Unlock()
	if again {
		return fmt.Errorf("per-user server %q rejects a freshly refreshed token of the catalog's login", server)
	}
	key, err := a.pu.logins.catalogLogin(ctx, serverURL)
	if err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("per-user server %q: nobody has logged in yet", server)
	}
	tok, err := a.pu.logins.token(ctx, key, server, sent)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.sent[server] = tok
	a.mu.Unlock()
	return nil
}

func hasAuthorization(h map[string]string) bool {
	for k := range h {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}
