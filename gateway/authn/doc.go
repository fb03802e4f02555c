// Package authn authenticates the HTTP requests of a gateway: Require is
// the middleware that refuses a request without a valid bearer credential
// (401 with WWW-Authenticate: Bearer, or 503 when the credential cannot
// be checked now) and puts the caller's Identity on the request's context
// (WithIdentity, IdentityFrom), where gateway.Gateway's Handler takes it
// for the caller: its user names the log lines and audit records, binds
// its HTTP sessions and scopes what it sees under a policy.
//
// A Verifier says whose a credential is. Three come with the package:
//
//   - Tokens, per-user API tokens (tsk_…, made by toolsift token create),
//     kept hashed in a store.Store that replicas share; a revocation is
//     refused here at once, by other replicas within TokenCacheTTL, or at
//     once while Tokens.Watch runs over a store.Watcher; while the store
//     cannot be read, a token read before is accepted from memory for
//     5 minutes;
//   - OIDC, bearer JWTs an OpenID Connect issuer signed (NewOIDC), whose
//     claims name the user and teams; Tokens.Or(oidc) takes both, a
//     bearer starting with TokenPrefix being an API token;
//   - SharedToken, one token every caller shares: its callers are
//     anonymous.
//
// A Verifier of your own (any type with Verify) works the same way.
//
// Quick start, the gateway behind API tokens:
//
//	tokens := authn.NewTokens(st) // st: the store replicas share
//	go tokens.Watch(ctx)          // revocations elsewhere, at once
//	gw, err := gateway.Open(ctx, cfg, nil)
//	if err != nil { ... }
//	defer gw.Close()
//	mux.Handle("/mcp", authn.Require(tokens, &authn.Options{Logger: logger})(gw.Handler()))
package authn

import "errors"

// ErrOptions reports invalid options (OIDCOptions).
var ErrOptions = errors.New("authn: invalid options")
