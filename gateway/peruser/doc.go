// Package peruser reaches the remote servers of a gateway that each user
// calls with the user's own OAuth login (a mailbox, a tracker, a drive:
// docs/serve.md, "Team gateway: per-user logins"). Logins, given to the
// gateway as gateway.Options.PerUser, routes a user's calls of such a
// server's tools to a session of that user's own, opened with that user's
// token and no one else's; a user without a login gets a tool result with
// the link of the login page, which Handler serves (PublicURL/login/SERVER
// and the OAuth callback PublicURL/oauth/callback).
//
// The logins are kept in a store.Store that replicas may share, sealed
// with AES-256-GCM under a key that is never stored (Options.LoginKey,
// LoginKeySize bytes; a record names its key by LoginKeyID), its store key
// as additional data; a store sealed with another key is refused
// (ErrLoginKey), and its records never overwritten. A token is refreshed
// once across replicas, under the store's lock. The first user to log in
// lists the server's tools for the catalog; until then LoginPending says
// so (gateway.LoginPender), and a search_tools answer names the server
// with its login page rather than as one that failed. Over a shared
// store.Watcher (PostgreSQL) the other replicas list it as soon as the
// replica the login went through has.
//
// Who calls comes from the request's Identity (authn.IdentityFrom), which
// an authentication in front of the gateway and of Handler sets: without
// one, a call answers that the gateway needs an authentication that names
// its users. A login is its user's only: a login link is refused to a
// browser signed in as someone else, and, where the authorization server
// says who approved (oauth.Credentials.Subject), a login is bound to that
// account, which is one user's login here. A user the gateway's policy
// keeps from a server is offered no login to it.
//
// Quick start:
//
//	logins, err := peruser.New(ctx, cfg, &peruser.Options{
//		Servers: []string{"mail"}, Store: st, LoginKey: key, PublicURL: "https://gw.example.com",
//	})
//	if err != nil { ... }
//	gw, err := gateway.Open(ctx, cfg, &gateway.Options{PerUser: logins})
//	if err != nil { ... }
//	defer gw.Close()
//	mux.Handle("/mcp", authn.Require(tokens, nil)(gw.Handler()))
//	mux.Handle("/", logins.Handler()) // a browser comes with a login link's ticket
package peruser
