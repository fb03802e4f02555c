// Package store is the seam for everything toolsift keeps between runs
// and shares between processes: tool lists per server, vectors per
// embedder, token costs, trust records of first-seen tool versions, OAuth
// logins, API tokens and audit records. Each goes through one small
// interface, [Store]: bytes by key, with atomic replacement and a named
// lock for read-modify-write.
//
// Two implementations come with toolsift:
//   - [Dir], files in a folder, the embedded default
//     (os.UserCacheDir()/toolsift): a key is a relative path in it, each
//     value written atomically (mode 0600, folders 0700) and read back only
//     from a regular file owned by the user and not writable by others;
//     locks are flock(2) on files under its .locks/ folder.
//   - [Memory], a map in this process: tests, and runs that keep nothing.
//
// Four interfaces are optional: [Watcher] (a shared store tells replicas
// what another changed), [BoundedGetter] (a value over a limit refused
// unread: [GetBounded]), [PrefixDeleter] (every key under a prefix
// deleted at once and counted: [DeletePrefix], which for a store without
// it lists the keys and deletes each) and [RateLimiter] (token buckets
// shared by every process on the store; store/postgres has it). Memory, Dir and store/postgres are
// PrefixDeleters, Dir removing the folders it leaves empty.
//
// A shared store for a team gateway (PostgreSQL) lives in its own package,
// store/postgres, so that this one imports no database driver.
//
// The package storetest holds the behaviour every Store must have, as a
// test any implementation runs.
package store
