package usagekey_test

import (
	"testing"

	"github.com/toolsift/toolsift/internal/usagekey"
	"github.com/toolsift/toolsift/store"
)

// Key makes a valid store key of any scope, and Scope reads it back.
func TestKey(t *testing.T) {
	for _, scope := range []string{"", "team", "team a", "=", ".hidden", "é/x", "a=20"} {
		key := usagekey.Key(scope)
		if err := store.CheckKey(key); err != nil {
			t.Errorf("Key(%q) = %q: %v", scope, key, err)
		}
		if got, ok := usagekey.Scope(key); !ok || got != scope {
			t.Errorf("Scope(%q) = %q, %v; want %q", key, got, ok, scope)
		}
	}
	for _, key := range []string{"usage/", "usage/=2", "usage/=zz", "usage/a=2", "other/x", "usage/=61"} {
		if s, ok := usagekey.Scope(key); ok {
			t.Errorf("Scope(%q) = %q, true; want false", key, s)
		}
	}
}
