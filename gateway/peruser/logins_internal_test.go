package peruser

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/store"
)

func testLogins(t *testing.T) *userLogins {
	t.Helper()
	key := make([]byte, LoginKeySize)
	rand.Read(key)
	seal, err := newSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return &userLogins{st: store.NewMemory(), seal: seal, found: map[[2]string]string{}}
}

// TestSealBoundToKey: a sealed record opens under its own store key only:
// alice's login moved under bob's key does not open, and says so.
func TestSealBoundToKey(t *testing.T) {
	l := testLogins(t)
	ctx := context.Background()
	alice, bob := loginKey("alice", "https://as", "https://rs"), loginKey("bob", "https://as", "https://rs")
	if err := l.put(ctx, alice, &userLogin{Server: "remote"}); err != nil {
		t.Fatal(err)
	}
	b, _ := l.st.Get(ctx, alice)
	if err := l.st.Put(ctx, bob, b); err != nil {
		t.Fatal(err)
	}
	if ul, err := l.get(ctx, alice); err != nil || ul.Server != "remote" {
		t.Fatalf("alice's record: %+v, %v", ul, err)
	}
	if _, err := l.get(ctx, bob); !errors.Is(err, ErrLoginKey) || !strings.Contains(err.Error(), "fails authentication") {
		t.Fatalf("alice's record under bob's key: %v, want ErrLoginKey", err)
	}
}

// TestSweep: expired logins under way and tickets are removed, the others
// kept.
func TestSweep(t *testing.T) {
	l := testLogins(t)
	ctx := context.Background()
	put := func(key string, v any) {
		b, err := l.seal.seal(key, v)
		if err == nil {
			err = l.st.Put(ctx, key, b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	past, future := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	put(pendingKey("old"), &pendingLogin{User: "a", Expires: past})
	put(pendingKey("new"), &pendingLogin{User: "a", Expires: future})
	put(ticketKey("old"), &ticket{User: "a", Expires: past})
	put(ticketKey("new"), &ticket{User: "a", Expires: future})
	l.sweep(ctx)
	keys, _ := l.st.List(ctx, loginsPrefix)
	want := []string{pendingKey("new"), ticketKey("new")}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("after the sweep: %q, want %q", keys, want)
	}
}

// TestUserHubsIdle: a user's Hub unused for hubIdle is dropped when
// another is made; one in use, or used lately, is kept.
func TestUserHubsIdle(t *testing.T) {
	pu := &Logins{logins: testLogins(t), hubs: map[[2]string]*userHub{}}
	old := time.Now().Add(-2 * hubIdle)
	pu.hubs[[2]string{"a", "s"}] = &userHub{used: old}
	pu.hubs[[2]string{"b", "s"}] = &userHub{used: old, calls: 1}
	pu.hubs[[2]string{"c", "s"}] = &userHub{used: time.Now()}
	_, done, err := pu.userHub("d", "s")
	if err != nil {
		t.Fatal(err)
	}
	done()
	var users []string
	for k := range pu.hubs {
		users = append(users, k[0])
	}
	slices.Sort(users)
	if strings.Join(users, " ") != "b c d" {
		t.Fatalf("hubs of %q, want b (in use), c (used lately) and d (new)", users)
	}
}
