package upstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/toolsift/toolsift/tool"
)

// StartMode says when a Hub starts its servers.
type StartMode int

const (
	// StartLazy, the default, starts at Connect only the servers whose tool
	// list is not in the cache; the others are StateLazy until a call
	// needs them, and go back to it after HubOptions.IdleTimeout.
	StartLazy StartMode = iota
	// StartEager starts every server at Connect and keeps it running. The
	// cache is still written, so that a later lazy Hub can use it.
	StartEager
)

const defaultIdleTimeout = 5 * time.Minute

// announce applies the cached tools of the lazy servers (the change sink),
// in a goroutine of wg, then lets Connect (and their first callers) go on.
// Until then a call waits, so that a server's start cannot overtake its
// announcement.
func announce(wg *sync.WaitGroup, lazy []*server) {
	if len(lazy) == 0 {
		return
	}
	changes := make([]tool.Change, len(lazy))
	for i, s := range lazy {
		changes[i] = tool.Change{Server: s.name}
		for _, q := range slices.Sorted(maps.Keys(s.tools)) {
			changes[i].Added = append(changes[i].Added, s.tools[q])
		}
	}
	wg.Go(func() {
		for i, s := range lazy {
			s.apply(changes[i])
			s.attempted()
		}
	})
}

// startAll starts the lazy servers at once and sends the join of their
// start failures when each is up or failed.
func startAll(ctx context.Context, lazy []*server) <-chan error {
	out := make(chan error, 1)
	errs := make([]error, len(lazy))
	var wg sync.WaitGroup
	for i, s := range lazy {
		wg.Go(func() {
			s.h.mu.Lock()
			defer s.h.mu.Unlock()
			started, err := s.start(ctx)
			if err == nil && started && s.state == StateFailed {
				err = s.err
			}
			if err != nil {
				errs[i] = fmt.Errorf("server %s: start: %w", s.name, err)
			}
		})
	}
	go func() {
		wg.Wait()
		out <- errors.Join(errs...)
	}()
	return out
}
