// Package oauth logs in to MCP servers that need it and keeps their tokens:
// the client side of MCP authorization (OAuth 2.1, the 2025-11-25
// specification) for remote (url) servers.
//
// A Store is both halves. Login runs the flow once, with a person at a
// browser: it asks the server what it needs (the WWW-Authenticate challenge
// of its 401 and its protected resource metadata, RFC 9728), discovers the
// authorization server (RFC 8414, or OpenID Connect discovery), identifies
// the client (an id and secret from the config, a client ID metadata
// document, or dynamic client registration, RFC 7591), and runs the
// authorization code flow with PKCE (S256) and the resource parameter (RFC
// 8707), the browser coming back to a loopback port. A server on the
// 2025-03-26 specification, which publishes no resource metadata, has its
// origin as authorization server: its metadata there, else the endpoints
// /authorize, /token and /register there (as the go-sdk's client does). Token and
// Unauthorized then serve the Hub (upstream.HubOptions.Auth): stored tokens go
// to their server's origin only, are refreshed when they expire (under a
// file lock, so that processes sharing the folder use a rotated refresh
// token once), and a server that needs a (new) login fails at once with a
// *LoginError naming the command that logs in: nothing but Login waits for
// a person.
//
// Logins are kept in a store.Store (Options.Store), one value per server
// URL under oauth/<hash of it>.json: by default DefaultStore, the config
// folder's toolsift, where each is a file 0600 in a 0700 folder (as
// toolsift has always kept them); no OS keyring is used. Each login names
// the authorization server that issued its tokens
// and the client registered with it; tokens never appear in errors or
// logs, and toolsift's caches and their fingerprints never see them.
//
// A web server that receives the browser's return itself (a gateway
// logging in each of its users) drives the same steps with StartLogin,
// which returns a PendingLogin (the authorization URL, its state, the PKCE
// verifier) to keep until the callback, and FinishLogin, which exchanges
// the code for Credentials; it keeps those where it likes and renews them
// with Refresh, under its own lock.
//
// The go-sdk's oauthex package does the discovery and registration
// requests (with its protections against requests to private addresses),
// and golang.org/x/oauth2 the code exchange, PKCE and refresh.
//
//	store, _ := oauth.New(&oauth.Options{LoginHint: "myapp login"})
//	hub, _ := upstream.NewHub(cfg, &upstream.HubOptions{Auth: store})
//	// ... a server's status says: server "notes" needs a login: not
//	// logged in; log in with: myapp login notes
//	_, err := store.Login(ctx, "notes", url, &oauth.LoginOptions{Open: openBrowser})
package oauth
