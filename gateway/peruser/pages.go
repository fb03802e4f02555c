package peruser

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// pendingTTL is how long a login may take from its start to the
// callback; ticketTTL how long a login link is good for.
const (
	pendingTTL = 10 * time.Minute
	ticketTTL  = 15 * time.Minute
)

// loginCookie names the cookie that binds a login to the browser that
// started it, one per login (a browser may log in to two servers at once).
func loginCookie(state string) string { return "toolsift_login_" + hashHex(state)[:16] }

// Handler serves the logins under Options.PublicURL: GET /login/SERVER
// starts the request's user's login to SERVER (discovery, client
// registration with the callback as redirect URI, PKCE) and redirects the
// browser to the authorization server; GET /oauth/callback, where the
// authorization server sends it back, checks the state (made for that
// user, used once, within 10 minutes), exchanges the code and stores the
// tokens, sealed with Options.LoginKey. The login page serves the
// request's user (authn.IdentityFrom: the authentication in front sets
// it, as for the Gateway's Handler) or, for a browser that cannot say who
// its user is, the user its ticket was made for: the link a call without
// a login is answered with carries one (used once, within 15 minutes).
// The callback is finished for the user who started the login only: the
// request's user, else the browser that started it (a cookie). The pages
// are plain HTML; other paths answer 404. Mount it where PublicURL's path
// is served. Every call returns the same handler.
func (pu *Logins) Handler() http.Handler {
	pu.handlerOnce.Do(func() {
		mux := http.NewServeMux()
		base, _ := url.Parse(pu.logins.base)
		mux.HandleFunc("GET "+base.Path+"/login/{server}", pu.startLogin)
		mux.HandleFunc("GET "+base.Path+"/oauth/callback", pu.finishLogin)
		pu.handler = mux
	})
	return pu.handler
}

// page answers a small HTML page.
func page(w http.ResponseWriter, status int, format string, a ...any) {
	for i, v := range a {
		if s, ok := v.(string); ok {
			a[i] = html.EscapeString(s)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>toolsift login</title><p>"+format+"\n", a...)
}

// requestUser returns the user the request's Identity names, "" when none.
func requestUser(r *http.Request) string {
	id, _ := authn.IdentityFrom(r.Context())
	return id.User
}

const noUser = "Who are you? This gateway's logins are per user, and this request names none: open the login link a tool call gave you, or sign in to the gateway first."

// ticketURL returns the login page's link for id's user and server,
// with a ticket made for id; the bare page's when the ticket cannot be
// stored.
func (pu *Logins) ticketURL(ctx context.Context, id authn.Identity, server string) string {
	user := id.User
	// A user who calls again soon gets the same link while it is unused:
	// calls in a loop do not fill the store with tickets.
	k := [2]string{user + "\x00" + strings.Join(id.Teams, "\x00"), server}
	pu.mu.Lock()
	last, ok := pu.tickets[k]
	pu.mu.Unlock()
	if ok && time.Since(last.made) < ticketTTL/3 {
		if _, err := pu.logins.st.Get(ctx, ticketKey(last.ticket)); err == nil {
			return pu.logins.loginURL(server) + "?ticket=" + last.ticket
		}
	}
	pu.logins.sweep(ctx)
	tk := rand.Text()
	key := ticketKey(tk)
	b, err := pu.logins.seal.seal(key, &ticket{User: user, Teams: id.Teams, Server: server, Expires: time.Now().Add(ticketTTL)})
	if err == nil {
		err = pu.logins.st.Put(ctx, key, b)
	}
	if err != nil {
		pu.log.Warn("login link without a ticket", "server", server, "user", user, "error", err)
		return pu.logins.loginURL(server)
	}
	pu.mu.Lock()
	for k, t := range pu.tickets {
		if time.Since(t.made) >= ticketTTL/3 {
			delete(pu.tickets, k)
		}
	}
	pu.tickets[k] = madeTicket{ticket: tk, made: time.Now()}
	pu.mu.Unlock()
	return pu.logins.loginURL(server) + "?ticket=" + tk
}

// madeTicket is the last ticket made for a (user, server).
type madeTicket struct {
	ticket string
	made   time.Time
}

// takeTicket returns the caller a ticket for server was made for, and
// removes it; ok is false when it is unknown, used, expired or for
// another server.
func (pu *Logins) takeTicket(ctx context.Context, tk, server string) (id authn.Identity, ok bool) {
	key := ticketKey(tk)
	unlock, err := pu.logins.st.Lock(ctx, key)
	if err != nil {
		return authn.Identity{}, false
	}
	defer unlock()
	b, err := pu.logins.st.Get(ctx, key)
	if err != nil {
		return authn.Identity{}, false
	}
	var t ticket
	if err := pu.logins.seal.open(key, b, &t); err != nil {
		return authn.Identity{}, false
	}
	if err := pu.logins.st.Delete(ctx, key); err != nil || time.Now().After(t.Expires) || t.Server != server || t.User == "" {
		return authn.Identity{}, false
	}
	return authn.Identity{User: t.User, Teams: t.Teams}, true
}

// notHere is the page for a server that does not log in per user here,
// and for one the caller's scope does not hold: the same, word for word.
func notHere(w http.ResponseWriter, server string) {
	page(w, http.StatusNotFound, "No server %s here logs in per user.", server)
}

// peekTicket returns the user a ticket for server was made for, leaving
// it in the store; ok is false when it is unknown, expired or for another
// server.
func (pu *Logins) peekTicket(ctx context.Context, tk, server string) (user string, ok bool) {
	key := ticketKey(tk)
	b, err := pu.logins.st.Get(ctx, key)
	if err != nil {
		return "", false
	}
	var t ticket
	if err := pu.logins.seal.open(key, b, &t); err != nil || time.Now().After(t.Expires) || t.Server != server {
		return "", false
	}
	return t.User, true
}

// startLogin serves GET /login/SERVER.
func (pu *Logins) startLogin(w http.ResponseWriter, r *http.Request) {
	server := r.PathValue("server")
	sc, ok := pu.servers[server]
	if !ok {
		notHere(w, server)
		return
	}
	// Whose login this is: the request's user (an authentication in front
	// of the pages says who the browser is), else the user the link's
	// ticket was made for. A link is its user's only: a browser that says
	// it is someone else is refused, and the ticket left for its user.
	id, signedIn := authn.IdentityFrom(r.Context())
	signedIn = signedIn && id.User != ""
	switch tk := r.URL.Query().Get("ticket"); {
	case tk != "" && signedIn:
		owner, ok := pu.peekTicket(r.Context(), tk, server)
		if ok && owner != id.User {
			pu.log.Warn("login refused: a login link opened by another user", "server", server, "user", id.User)
			page(w, http.StatusForbidden, "This login link was made for another user than the one this browser is signed in as (%s): it is not yours, and nothing was done. Call the tool yourself for a link of your own.", id.User)
			return
		}
		if ok {
			pu.takeTicket(r.Context(), tk, server) // the user's own: used
		}
	case tk != "":
		var ok bool
		if id, ok = pu.takeTicket(r.Context(), tk, server); !ok {
			page(w, http.StatusBadRequest, "This login link is unknown, used or expired: call the tool again for a new one.")
			return
		}
	}
	if id.User == "" {
		page(w, http.StatusUnauthorized, noUser)
		return
	}
	if !pu.inScope(id, server) {
		notHere(w, server) // as a server that does not exist
		return
	}
	user := id.User
	opts := &oauth.LoginOptions{RedirectURL: pu.logins.base + "/oauth/callback", Header: http.Header{}}
	for k, v := range sc.Headers {
		opts.Header.Set(k, v)
	}
	if o := sc.OAuth; o != nil {
		opts.ClientID, opts.ClientSecret, opts.ClientMetadataURL, opts.Scopes = o.ClientID, o.ClientSecret, o.ClientMetadataURL, o.Scopes
	}
	ctx := r.Context()
	// Step-up: what the user's login had, and what the server asked for since.
	opts.Scopes = slices.Clone(opts.Scopes)
	for _, scope := range pu.logins.scopesOf(ctx, user, sc.URL) {
		if !slices.Contains(opts.Scopes, scope) {
			opts.Scopes = append(opts.Scopes, scope)
		}
	}
	pu.logins.sweep(ctx)
	p, err := pu.logins.oauth.StartLogin(ctx, server, sc.URL, opts)
	if err != nil {
		pu.log.Warn("login not started", "server", server, "user", user, "error", err)
		page(w, http.StatusBadGateway, "The login to %s could not start: %s", server, err.Error())
		return
	}
	nonce := rand.Text()
	pl := &pendingLogin{User: user, Teams: id.Teams, Browser: hashHex(nonce), Server: server, Expires: time.Now().Add(pendingTTL), Pending: p}
	key := pendingKey(p.State)
	b, err := pu.logins.seal.seal(key, pl)
	if err == nil {
		err = pu.logins.st.Put(ctx, key, b)
	}
	if err != nil {
		pu.log.Error("login not started", "server", server, "user", user, "error", err)
		page(w, http.StatusInternalServerError, "The login to %s could not start: the gateway could not store it.", server)
		return
	}
	base, _ := url.Parse(pu.logins.base)
	http.SetCookie(w, &http.Cookie{Name: loginCookie(p.State), Value: nonce, Path: base.Path + "/oauth/callback",
		MaxAge: int(pendingTTL.Seconds()), HttpOnly: true, Secure: base.Scheme == "https", SameSite: http.SameSiteLaxMode})
	pu.log.Info("login started", "server", server, "user", user)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, p.AuthURL, http.StatusFound)
}

// takePending returns the login the state names, removed from the store
// (a state is used once), when it is the request's user's (r's Identity,
// else its browser's cookie) and still valid; else the page to answer
// (status and text).
func (pu *Logins) takePending(r *http.Request, state string) (*pendingLogin, int, string) {
	ctx := r.Context()
	if state == "" {
		return nil, http.StatusBadRequest, "This is not a login's return: it has no state."
	}
	key := pendingKey(state)
	unlock, err := pu.logins.st.Lock(ctx, key)
	if err != nil {
		return nil, http.StatusInternalServerError, "The gateway could not read the login."
	}
	defer unlock()
	b, err := pu.logins.st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, http.StatusBadRequest, "This login is unknown or was already used: start again."
	}
	if err != nil {
		return nil, http.StatusInternalServerError, "The gateway could not read the login."
	}
	var pl pendingLogin
	if err := pu.logins.seal.open(key, b, &pl); err != nil {
		pu.log.Error("login refused", "error", err)
		return nil, http.StatusInternalServerError, "The gateway could not read the login: its login key differs from the one that started it."
	}
	// Not consumed when refused: the user who started it may still
	// finish it.
	if user := requestUser(r); user != "" {
		if user != pl.User {
			return nil, http.StatusForbidden, "This login was started by another user."
		}
	} else if !sameBrowser(r, state, &pl) {
		return nil, http.StatusForbidden, "This login was started in another browser, or by another user."
	}
	if err := pu.logins.st.Delete(ctx, key); err != nil {
		return nil, http.StatusInternalServerError, "The gateway could not read the login."
	}
	if time.Now().After(pl.Expires) {
		return nil, http.StatusBadRequest, "This login took too long: start again."
	}
	return &pl, 0, ""
}

// sameBrowser reports whether r comes from the browser that started the
// login pl of state (its cookie).
func sameBrowser(r *http.Request, state string, pl *pendingLogin) bool {
	c, err := r.Cookie(loginCookie(state))
	return err == nil && hashHex(c.Value) == pl.Browser
}

// finishLogin serves GET /oauth/callback.
func (pu *Logins) finishLogin(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	pl, status, msg := pu.takePending(r, q.Get("state"))
	if pl == nil {
		pu.log.Warn("login refused", "user", requestUser(r), "status", status, "reason", msg)
		page(w, status, "%s", msg)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie(q.Get("state")), Path: r.URL.Path, MaxAge: -1})
	server, user := pl.Server, pl.User
	sc, ok := pu.servers[server]
	if !ok || sc.URL != pl.Pending.Credentials.ServerURL {
		page(w, http.StatusBadRequest, "Server %s no longer logs in per user here, or moved: start again.", server)
		return
	}
	if !pu.inScope(authn.Identity{User: user, Teams: pl.Teams}, server) {
		notHere(w, server) // the policy changed since the login started
		return
	}
	if e := q.Get("error"); e != "" {
		pu.log.Warn("login refused by the authorization server", "server", server, "user", user, "error", e)
		page(w, http.StatusForbidden, "The authorization server refused the login to %s: %s %s", server, e, q.Get("error_description"))
		return
	}
	c, err := pu.logins.oauth.FinishLogin(ctx, pl.Pending, q.Get("code"), q.Get("iss"))
	if err != nil {
		pu.log.Warn("login failed", "server", server, "user", user, "error", err)
		page(w, http.StatusBadGateway, "The login to %s failed: %s", server, err.Error())
		return
	}
	key := loginKey(user, c.Issuer, c.Resource)
	// The user may change accounts from a browser the gateway knows is
	// theirs that started this login: not one made to load another's
	// callback.
	signedIn := requestUser(r) == user && sameBrowser(r, q.Get("state"), pl)
	refusal, err := pu.claim(ctx, user, signedIn, key, &userLogin{Server: server, Credentials: *c})
	if err != nil {
		pu.log.Error("login not stored", "server", server, "user", user, "error", err)
		page(w, http.StatusInternalServerError, "The login to %s succeeded but could not be stored: %s", server, err.Error())
		return
	}
	if refusal != "" {
		pu.log.Warn("login refused: approved with another account", "server", server, "user", user, "reason", refusal)
		page(w, http.StatusForbidden, "%s", refusal)
		return
	}
	pu.logins.mu.Lock()
	pu.logins.found[[2]string{user, sc.URL}] = key
	pu.logins.mu.Unlock()
	pu.log.Info("logged in", "server", server, "user", user)
	// A session the user had is of the old login: the next call opens one
	// with the new.
	pu.mu.Lock()
	uh := pu.hubs[[2]string{user, server}]
	pu.mu.Unlock()
	if uh != nil {
		pu.drop(user, server, uh)
	}
	pu.listCatalog(ctx, server, sc.URL, key)
	page(w, http.StatusOK, "Logged in to %s as %s. You can close this tab and call its tools again.", server, user)
}

// claim stores ul, the login of user to a per-user server whose
// authorization server approved it, under key (saveLogin), bound to the
// account that approved it where that server says who it is
// (Credentials.Subject): it returns the page's words of a refusal, with
// nothing stored, when that account is another user's login here (a
// login is one person's: a link of carol's opened by alice, who approves
// as herself, does not make alice's account carol's), or when user's
// login to that server is another account's and the browser is not
// signed in to the gateway as user (signedIn): a link of carol's opened
// by someone else logs nobody in as carol; carol changes accounts from a
// browser the gateway knows is hers.
func (pu *Logins) claim(ctx context.Context, user string, signedIn bool, key string, ul *userLogin) (refusal string, err error) {
	c := &ul.Credentials
	if c.Subject == "" {
		// The authorization server does not say who approved: the login
		// is bound by its link and browser only.
		return "", pu.saveLogin(ctx, user, key, ul)
	}
	l := pu.logins
	sk := subjectKey(c.Issuer, c.Subject)
	unlock, err := l.st.Lock(ctx, sk)
	if err != nil {
		return "", err
	}
	defer unlock()
	var owner subjectOwner
	switch b, err := l.st.Get(ctx, sk); {
	case err == nil:
		if err := l.seal.open(sk, b, &owner); err != nil {
			return "", err
		}
	case !errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("peruser: reading whose login an account is: %w", err)
	}
	if owner.User != "" && owner.User != user {
		if theirs, err := l.get(ctx, owner.Login); err != nil {
			return "", err
		} else if theirs != nil && theirs.Credentials.Subject == c.Subject && theirs.Credentials.Issuer == c.Issuer {
			return fmt.Sprintf("The account you approved with at %s's authorization server is another user's login here, and a login is one person's: nothing was stored. If this login link is %s's, %s opens it and logs in with their own account.", ul.Server, user, user), nil
		}
	}
	var before *userLogin
	if prev, err := l.find(ctx, user, c.ServerURL); err != nil {
		return "", err
	} else if prev != "" {
		if before, err = l.get(ctx, prev); err != nil {
			return "", err
		}
	}
	changed := before != nil && before.Credentials.Subject != "" && before.Credentials.Issuer == c.Issuer && before.Credentials.Subject != c.Subject
	if changed && !signedIn {
		return fmt.Sprintf("%s's login to %s is another account's than the one you approved with: nothing was stored. If this login link is not yours, close this page; %s logs in with the account they logged in with before (to log in with another, %s opens the login page signed in to the gateway).", user, ul.Server, user, user), nil
	}
	if err := pu.saveLogin(ctx, user, key, ul); err != nil {
		return "", err
	}
	b, err := l.seal.seal(sk, &subjectOwner{User: user, Login: key})
	if err != nil {
		return "", err
	}
	if err := l.st.Put(ctx, sk, b); err != nil {
		return "", fmt.Errorf("peruser: storing whose login an account is: %w", err)
	}
	if changed {
		l.release(ctx, user, before.Credentials.Issuer, before.Credentials.Subject)
	}
	return "", nil
}

// saveLogin stores ul under key, unless a record there is sealed with
// another key: never overwritten. The user's other logins to the same
// server URL (of another issuer or resource: the server moved) are
// removed, so that no replica keeps using them.
func (pu *Logins) saveLogin(ctx context.Context, user, key string, ul *userLogin) error {
	unlock, err := pu.logins.st.Lock(ctx, key)
	if err != nil {
		return err
	}
	if _, err = pu.logins.get(ctx, key); err == nil {
		err = pu.logins.put(ctx, key, ul)
	}
	unlock()
	if err != nil {
		return err
	}
	keys, err := pu.logins.st.List(ctx, userPrefix(user))
	if err != nil {
		return nil // stored; the others stay until the next login
	}
	for _, k := range keys {
		if k == key {
			continue
		}
		if old, err := pu.logins.get(ctx, k); err == nil && old != nil && old.Credentials.ServerURL == ul.Credentials.ServerURL {
			_ = pu.logins.st.Delete(ctx, k)
		}
	}
	return nil
}

// listCatalog makes the login stored under key the one that lists the
// server's tools for the catalog when none does yet (or the one that did
// has no tokens left), and starts the server again in the shared Hub if it
// failed for want of it.
func (pu *Logins) listCatalog(ctx context.Context, server, serverURL, key string) {
	if err := pu.logins.replaceCatalogLogin(ctx, serverURL, key); err != nil {
		pu.log.Warn("catalog login not set", "server", server, "error", err)
		return
	}
	hub := pu.shared()
	if hub == nil {
		return
	}
	for _, st := range hub.Status() {
		if st.Name == server && st.State == upstream.StateFailed {
			if err := hub.Retry(ctx, server); err != nil {
				pu.log.Warn("per-user server not listed", "server", server, "error", err)
			} else {
				pu.log.Info("per-user server listed", "server", server)
			}
		}
	}
}
