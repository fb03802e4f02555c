package authn

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
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

// downStore is a store whose reads fail while down is set, as a database
// that went away answers.
type downStore struct {
	store.Store
	down atomic.Bool
}

var errDown = errors.New("server unavailable")

func (d *downStore) Get(ctx context.Context, key string) ([]byte, error) {
	if d.down.Load() {
		return nil, errDown
	}
	return d.Store.Get(ctx, key)
}

// TestVerifyDuringOutage: while the store cannot be read, a token read
// live before is accepted from memory, for tokenOutageTTL since that
// read and no longer; a token never read gets the store's error (503);
// one whose revocation was seen stays refused; a token read from memory
// is not read from the store again before TokenCacheTTL.
func TestVerifyDuringOutage(t *testing.T) {
	ctx := context.Background()
	d := &downStore{Store: store.NewMemory()}
	tk := NewTokens(d)
	now := time.Unix(1e9, 0)
	tk.SetClock(func() time.Time { return now })
	alice, _, err := tk.Create(ctx, "alice", []string{"eng"}, "")
	if err != nil {
		t.Fatal(err)
	}
	bob, _, _ := tk.Create(ctx, "bob", nil, "never read")
	carol, carolTok, _ := tk.Create(ctx, "carol", nil, "revoked")
	for _, secret := range []string{alice, carol} {
		if _, err := tk.Verify(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	if err := tk.Revoke(ctx, carolTok.ID); err != nil {
		t.Fatal(err)
	}
	d.down.Store(true)
	for _, after := range []time.Duration{TokenCacheTTL, time.Minute, tokenOutageTTL - time.Second} {
		now = time.Unix(1e9, 0).Add(after)
		id, err := tk.Verify(ctx, alice)
		if err != nil || id.User != "alice" || len(id.Teams) != 1 || id.Teams[0] != "eng" {
			t.Errorf("alice %v into the outage: %+v, %v; want her identity from memory", after, id, err)
		}
	}
	if _, err := tk.Verify(ctx, bob); err == nil || errors.Is(err, ErrUnknownToken) || !strings.Contains(err.Error(), "server unavailable") {
		t.Errorf("bob, never read: %v, want the store's error (not ErrUnknownToken: a 503)", err)
	}
	if _, err := tk.Verify(ctx, carol); err == nil {
		t.Error("carol, revoked before the outage, accepted during it")
	}
	now = time.Unix(1e9, 0).Add(tokenOutageTTL)
	if _, err := tk.Verify(ctx, alice); err == nil || errors.Is(err, ErrUnknownToken) {
		t.Errorf("alice tokenOutageTTL after her last read: %v, want the store's error", err)
	}
	// Back: alice is read again, and the bound starts from that read.
	d.down.Store(false)
	if _, err := tk.Verify(ctx, alice); err != nil {
		t.Fatal(err)
	}
	d.down.Store(true)
	now = now.Add(tokenOutageTTL - time.Second)
	if _, err := tk.Verify(ctx, alice); err != nil {
		t.Errorf("alice after a new read and another outage: %v", err)
	}
}

// hangingStore is a store whose reads, while hang is set, wait for their
// ctx to end, as a database behind a partitioned network does.
type hangingStore struct {
	store.Store
	hang atomic.Bool
}

func (h *hangingStore) Get(ctx context.Context, key string) ([]byte, error) {
	if h.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.Store.Get(ctx, key)
}

// TestVerifyStoreHangs: a store read that does not answer is an outage
// too: after tokenReadTimeout a token read before is accepted from
// memory, and one never read refused with the store's error, rather than
// the request waiting for as long as its own ctx allows.
func TestVerifyStoreHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := &hangingStore{Store: store.NewMemory()}
		tk := NewTokens(h)
		alice, _, err := tk.Create(ctx, "alice", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		bob, _, _ := tk.Create(ctx, "bob", nil, "")
		if _, err := tk.Verify(ctx, alice); err != nil {
			t.Fatal(err)
		}
		h.hang.Store(true)
		time.Sleep(TokenCacheTTL)
		start := time.Now()
		if id, err := tk.Verify(ctx, alice); err != nil || id.User != "alice" {
			t.Errorf("alice while the store hangs: %+v, %v", id, err)
		}
		if waited := time.Since(start); waited != tokenReadTimeout {
			t.Errorf("Verify waited %v for the store, want %v", waited, tokenReadTimeout)
		}
		if _, err := tk.Verify(ctx, bob); err == nil || errors.Is(err, ErrUnknownToken) || !strings.Contains(err.Error(), "deadline exceeded") {
			t.Errorf("bob, never read, while the store hangs: %v, want the store's error", err)
		}
	})
}
