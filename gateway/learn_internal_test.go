package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolsift/toolsift/usage"
)

// searchMemo: a call matches the caller's latest search that returned the
// tool, once; not another caller's, not one past learnTTL; it keeps
// learnSearches searches per caller and learnCallers callers, the least
// recent forgotten first.
func TestSearchMemo(t *testing.T) {
	var m searchMemo
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	alice, bob := usage.Caller{Scope: "a", Identity: "alice"}, usage.Caller{Scope: "a", Identity: "bob"}
	m.searched(alice, "first", []string{"x", "y"}, now)
	m.searched(alice, "second", []string{"y"}, now)
	if q, ok := m.called(alice, "y", now); !ok || q != "second" {
		t.Errorf("called(y) = %q, %v; want the latest search, second", q, ok)
	}
	if q, ok := m.called(alice, "y", now); !ok || q != "first" {
		t.Errorf("called(y) again = %q, %v; want first (second taught y once)", q, ok)
	}
	if _, ok := m.called(alice, "y", now); ok {
		t.Error("a third call of y matched a search: each search teaches a tool once")
	}
	if _, ok := m.called(bob, "x", now); ok {
		t.Error("bob's call matched alice's search")
	}
	if _, ok := m.called(alice, "x", now.Add(learnTTL+time.Second)); ok {
		t.Error("a call past learnTTL matched")
	}
	for i := range learnSearches + 1 {
		m.searched(bob, fmt.Sprint("q", i), []string{fmt.Sprint("t", i)}, now)
	}
	if _, ok := m.called(bob, "t0", now); ok {
		t.Errorf("bob's oldest of %d searches is still matched, want %d kept", learnSearches+1, learnSearches)
	}
	for i := range learnCallers {
		m.searched(usage.Caller{Identity: fmt.Sprint("u", i)}, "q", []string{"t"}, now)
	}
	if len(m.callers) != learnCallers {
		t.Errorf("%d callers kept, want %d", len(m.callers), learnCallers)
	}
	if _, ok := m.callers[alice]; ok {
		t.Error("alice, who searched least recently, was not forgotten first")
	}
}
