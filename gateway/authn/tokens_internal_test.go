package authn

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// heldRead is a store whose next read of a token's hash record, once
// armed, reads the record and then waits for release before answering:
// a Verify in flight while the token is revoked.
type heldRead struct {
	store.Store
	armed   atomic.Bool
	read    chan struct{} // closed once the held read has its value
	release chan struct{}
}

func (h *heldRead) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := h.Store.Get(ctx, key)
	if strings.HasPrefix(key, "tokens/hash/") && h.armed.CompareAndSwap(true, false) {
		close(h.read)
		<-h.release
	}
	return v, err
}

// TestVerifyKeepsNoReadFromBeforeARevocation: a Verify that read a token
// before it was revoked (here, or as the store's watch reports: both
// forget it) answers that request as it read, but does not cache it, so
// the token is refused from the moment Revoke returns, not
// TokenCacheTTL later.
func TestVerifyKeepsNoReadFromBeforeARevocation(t *testing.T) {
	ctx := context.Background()
	h := &heldRead{Store: store.NewMemory(), read: make(chan struct{}), release: make(chan struct{})}
	tk := NewTokens(h)
	secret, tok, err := tk.Create(ctx, "alice", nil, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	h.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := tk.Verify(ctx, secret)
		done <- err
	}()
	select {
	case <-h.read:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("Verify never read the token")
	}
	if err := tk.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	close(h.release)
	if err := <-done; err != nil {
		t.Fatalf("the Verify in flight: %v, want the token as it read it", err)
	}
	if id, err := tk.Verify(ctx, secret); !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("after Revoke returned, Verify = %v, %v; want ErrUnknownToken (the read from before the revocation was cached)", id, err)
	}
}
