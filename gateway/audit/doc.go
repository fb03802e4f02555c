// Package audit is the audit log of an MCP server: one Record per
// tools/call (who called which tool of which server, when, how long, the
// outcome; never arguments, results or credentials), kept in a
// store.Store that replicas may share, each written before the call's
// result returns, or, while the store cannot take it, kept in memory and
// written when it can (Log).
//
// A Log is a receiving middleware of the go-sdk's server (Log.Middleware),
// so this package, unlike gateway and authn, names a go-sdk type in its
// API: a middleware's type is the SDK's. The middleware notes each
// tools/call request's caller and session; the handlers that make the
// call Report its record (gateway.Gateway does, given Options.Audit,
// outcomes it decides itself included: a tool out of the caller's scope,
// a quarantined one). Records reads the log back, oldest first, and
// Prune deletes the whole days older than a cut (toolsift audit prune,
// serve --audit-retention).
//
// Keys sort by time and never collide across replicas:
// audit/2026-11-26/<Unix nanoseconds, 19 digits>-<16 random hex>.json.
//
// Quick start, with a gateway:
//
//	gw, err := gateway.Open(ctx, cfg, &gateway.Options{Audit: &audit.Log{Store: st, Logger: logger}})
//	...
//	for rec, err := range audit.Records(ctx, st, time.Now().Add(-24*time.Hour)) { ... }
package audit
