// Package storewindow opens, for the tests of a store.Watcher's callers,
// the window between a caller's first read of a shared store and its
// watch listening, deterministically.
package storewindow

import (
	"context"
	"sync"

	"github.com/toolsift/toolsift/store"
)

// Store is a shared store: a store.Store that is a store.Watcher.
type Store interface {
	store.Store
	store.Watcher
}

// Window is a shared store whose Watch of Prefix first runs Before (what
// another process writes after a caller read the store at start and
// before the caller's watch listens) and then watches, with Listening
// closed once that watch has called the caller's ready. Watches of other
// prefixes are the store's own. The tests of a Watcher's callers use it
// to open that window deterministically, with no sleep: what Before
// wrote must be acted on once Listening is closed.
type Window struct {
	Store
	Prefix    string
	Before    func()
	Listening chan struct{}
	once      sync.Once
}

// New returns a Window over s for the watches of prefix; before may
// be set later, through the field, before the first such watch.
func New(s Store, prefix string, before func()) *Window {
	return &Window{Store: s, Prefix: prefix, Before: before, Listening: make(chan struct{})}
}

// Watch runs Before, then the store's Watch, for a watch of Prefix.
func (w *Window) Watch(ctx context.Context, prefix string, ready func(), f func(string)) error {
	if prefix != w.Prefix {
		return w.Store.Watch(ctx, prefix, ready, f)
	}
	if w.Before != nil {
		w.Before()
	}
	return w.Store.Watch(ctx, prefix, func() {
		if ready != nil {
			ready()
		}
		w.once.Do(func() { close(w.Listening) })
	}, f)
}

// DeletePrefix is the store's (store.DeletePrefix: its own when it is a
// store.PrefixDeleter), so that a Window keeps the prefix deletes of the
// store it wraps.
func (w *Window) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	return store.DeletePrefix(ctx, w.Store, prefix)
}
