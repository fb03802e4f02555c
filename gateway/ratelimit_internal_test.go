package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/authn"
)

func testLimiters(t *testing.T, limits ...config.PolicyLimit) *policy {
	t.Helper()
	pol, err := newPolicy(&config.Policy{Rules: []config.PolicyRule{
		{Teams: []string{"a"}, Allow: []string{"*"}, Limits: limits},
	}}, []string{"math"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// take is proxy.limited's loop, without a proxy.
func (pol *policy) take(id authn.Identity, name string) *refusal {
	p := &proxy{}
	p.policy.Store(pol)
	return p.limited(authn.WithIdentity(context.Background(), id), name)
}

// TestBucketRefills (fake clock): 60 calls a minute with a burst of 10:
// exactly 10 at once, then a refusal to retry in exactly 1 s; after it,
// one more; after a minute idle, 10 again (never more than the burst);
// over a minute of steady calls, exactly 60 more.
func TestBucketRefills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := testLimiters(t, config.PolicyLimit{Calls: 60, Per: time.Minute, Burst: 10})
		alice := authn.Identity{User: "alice", Teams: []string{"a"}}
		through := func() int {
			n := 0
			for pol.take(alice, "math__add") == nil {
				n++
			}
			return n
		}
		if n := through(); n != 10 {
			t.Fatalf("%d calls through at once, want the burst, 10", n)
		}
		r := pol.take(alice, "math__add")
		if r == nil || r.retry != time.Second || r.seconds() != 1 {
			t.Fatalf("refusal %+v, want a retry in 1 s", r)
		}
		time.Sleep(r.retry)
		if n := through(); n != 1 {
			t.Errorf("%d calls through after the retry time, want 1", n)
		}
		time.Sleep(time.Minute)
		if n := through(); n != 10 {
			t.Errorf("%d calls through after a minute idle, want 10", n)
		}
		n := 0
		for range 60 {
			time.Sleep(time.Second)
			n += through()
		}
		if n != 60 {
			t.Errorf("%d calls through in a minute of steady calls, want 60", n)
		}
		if r := pol.take(authn.Identity{User: "bob", Teams: []string{"a"}}, "math__add"); r != nil {
			t.Errorf("bob refused by alice's bucket: %+v", r)
		}
	})
}

// TestLimitKeys: "by" decides who shares a bucket; a limit of other tools
// or of searches takes nothing from a call.
func TestLimitKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := testLimiters(t,
			config.PolicyLimit{Name: "team", Calls: 2, Per: time.Hour, By: []string{"team"}, Tools: []string{"math"}},
			config.PolicyLimit{Name: "tool", Calls: 1, Per: time.Hour, By: []string{"user", "tool"}, Tools: []string{"text__*"}},
			config.PolicyLimit{Name: "searches", Searches: 1, Per: time.Hour, By: []string{}},
		)
		alice := authn.Identity{User: "alice", Teams: []string{"a"}}
		bob := authn.Identity{User: "bob", Teams: []string{"x", "a"}}
		for _, step := range []struct {
			id    authn.Identity
			name  string
			limit string // "" through
		}{
			{alice, "math__add", ""}, {bob, "math__divide", ""}, {alice, "math__add", "team"}, // team a shares 2
			{alice, "text__upper", ""}, {alice, "text__lower", ""}, {alice, "text__upper", "tool"}, {bob, "text__upper", ""}, // per user and tool
			{alice, "other__x", ""},                // counted by none
			{alice, "", ""}, {bob, "", "searches"}, // one bucket for every caller
		} {
			r := pol.take(step.id, step.name)
			got := ""
			if r != nil {
				got = r.l.name
			}
			if got != step.limit {
				t.Errorf("%s's %q: refused by %q, want %q", step.id.User, step.name, got, step.limit)
			}
		}
	})
}

// TestLimitRefusalGivesBack: a call one limit refuses takes no token of
// the others.
func TestLimitRefusalGivesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := testLimiters(t,
			config.PolicyLimit{Name: "all", Calls: 2, Per: time.Hour},
			config.PolicyLimit{Name: "add", Calls: 1, Per: time.Hour, Tools: []string{"math__add"}},
		)
		alice := authn.Identity{User: "alice", Teams: []string{"a"}}
		for i, want := range []string{"", "add", "add", "", "all"} {
			name := "math__add"
			if i >= 3 {
				name = "math__divide"
			}
			got := ""
			if r := pol.take(alice, name); r != nil {
				got = r.l.name
			}
			if got != want {
				t.Errorf("call %d (%s): refused by %q, want %q", i+1, name, got, want)
			}
		}
	})
}

// TestBucketsBounded: past maxBuckets keys, the full buckets are dropped,
// and the count never passes the bound.
func TestBucketsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := testLimiters(t, config.PolicyLimit{Calls: 1, Per: time.Second})
		l := pol.limits[0]
		for i := range maxBuckets + 100 {
			if i == maxBuckets/2 {
				time.Sleep(time.Second) // the first half refill
			}
			if r := pol.take(authn.Identity{User: fmt.Sprint("u", i), Teams: []string{"a"}}, "math__add"); r != nil {
				t.Fatalf("user %d refused", i)
			}
			if n := len(l.buckets); n > maxBuckets {
				t.Fatalf("%d buckets, over %d", n, maxBuckets)
			}
		}
		if n := len(l.buckets); n > maxBuckets/2+100 {
			t.Errorf("%d buckets after the refilled ones were dropped, want at most %d", n, maxBuckets/2+100)
		}
	})
}

// TestBucketConcurrent: 64 callers at once of one bucket of 20 (no time
// passes): exactly 20 through.
func TestBucketConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := testLimiters(t, config.PolicyLimit{Calls: 20, Per: time.Hour, By: []string{}})
		var wg sync.WaitGroup
		var through atomic.Int32
		for i := range 64 {
			wg.Go(func() {
				if pol.take(authn.Identity{User: fmt.Sprint("u", i), Teams: []string{"a"}}, "math__add") == nil {
					through.Add(1)
				}
			})
		}
		wg.Wait()
		if n := through.Load(); n != 20 {
			t.Errorf("%d of 64 concurrent calls through, want 20", n)
		}
	})
}
