package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotFound is wrapped by the error of Get for a key that holds nothing.
var ErrNotFound = errors.New("store: not found")

// ErrKey is wrapped by the error of an operation given a key that
// CheckKey refuses.
var ErrKey = errors.New("store: invalid key")

// MaxValueBytes bounds one value: a Store refuses to write a larger one
// and to read one back (a value that grew past it on disk or in a table is
// an error, not an allocation of whatever size it claims).
const MaxValueBytes = 1 << 30

// Store keeps values (bytes) by key for toolsift: what one process wrote,
// another process (a later run, or a replica) reads. Keys are
// slash-separated paths of the form CheckKey allows, such as
// "catalog/everything-1a2b.json" or "trust/memory-3c4d.json"; a kind of
// record owns its first segment.
//
// Implementations are safe for concurrent use by many goroutines and, for
// shared stores, by many processes at once. Every method may block on I/O
// and honours ctx.
type Store interface {
	// Get returns the value under key, or an error wrapping ErrNotFound.
	// The caller may keep and modify the slice.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put stores value under key, replacing what was there atomically: a
	// reader, in this process or another, sees the old value or the new
	// one, never a part. Once Put returns nil the value is durable.
	Put(ctx context.Context, key string, value []byte) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the keys that start with prefix, sorted. The empty
	// prefix lists every key.
	List(ctx context.Context, prefix string) ([]string, error)
	// Lock takes the exclusive lock named key (any valid key; it need not
	// hold a value), shared by every process using the same store, and
	// returns its release, which must be called once. It blocks until the
	// lock is free or ctx ends. A read-modify-write (an OAuth refresh, a
	// merge of cached records) takes it around the Get and the Put.
	Lock(ctx context.Context, key string) (unlock func(), err error)
	// Close releases what the Store holds (connections, files). The Store
	// must not be used after.
	Close() error
}

// Watcher is a Store that tells one process when another changed a key:
// a shared store (PostgreSQL) implements it so that replicas learn of a
// tool list, a trust record or a revoked token at once. A Store that is
// not a Watcher is read again when a caller needs it fresh.
type Watcher interface {
	// Watch calls f with the key of each Put or Delete made through
	// another process's Store under prefix, until ctx ends or the store
	// is closed; then it returns ctx's error or nil. f runs on one
	// goroutine, in order, and must not block for long. Changes made
	// through this same Store value are not reported.
	//
	// Watch calls ready once, on that goroutine and before any f, when it
	// is listening: every write another Store commits after ready was
	// called is reported. A write committed before may not be, whenever
	// it was made, so what a caller read before ready may already be out
	// of date: a caller that keeps state read from the store reads it
	// again, or checks it, in ready or after it (a write in between is
	// then both read and reported; f is a signal to read a key again).
	// ready must not block for long; nil is allowed for a caller that
	// keeps nothing read before. A Watch that ends before it is listening
	// (its ctx ended, its Store closed) returns without calling ready.
	Watch(ctx context.Context, prefix string, ready func(), f func(key string)) error
}

// CheckKey returns an error wrapping ErrKey unless key is a valid key:
// 1 to 512 bytes of segments joined by "/", each segment not empty, not
// "." or "..", not starting with "." and made of ASCII letters, digits and
// "-_.@+=:". A key so made is a safe relative path on every file system
// and a plain string in every database.
func CheckKey(key string) error {
	if key == "" || len(key) > 512 {
		return fmt.Errorf("%w %q: empty or longer than 512 bytes", ErrKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg[0] == '.' {
			return fmt.Errorf("%w %q: an empty segment or one starting with '.'", ErrKey, key)
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			case strings.IndexByte("-_.@+=:", c) >= 0:
			default:
				return fmt.Errorf("%w %q: byte %q is not allowed", ErrKey, key, c)
			}
		}
	}
	return nil
}

// checkPrefix accepts "" and any prefix of a valid key (a trailing "/"
// included).
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		return fmt.Errorf("%w prefix %q", ErrKey, prefix)
	}
	return CheckKey(p)
}

// RateLimiter is a Store that keeps rate limits shared by every process
// using it: the limits of a gateway's replicas on one store then hold
// across them, as one bucket each. A Store that is not a RateLimiter
// leaves each process to keep its own buckets.
type RateLimiter interface {
	// TakeToken takes n tokens (1 or more) from the bucket named key,
	// which holds burst tokens and gains one every interval, and returns
	// 0; or, when the bucket holds fewer than n, takes none and returns
	// how long until it will hold n. A negative n gives back -n tokens
	// taken before (a request refused by another limit after it took
	// this one's): the bucket never holds more than burst. Every process
	// taking from key must give the same interval and burst; key is any
	// string (a store may keep only its hash), not a key of Put.
	TakeToken(ctx context.Context, key string, n int, interval time.Duration, burst int) (retry time.Duration, err error)
}
