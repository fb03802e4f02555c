package gateway

import (
	"strings"
	"testing"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/tool"
)

// TestScope: which rules apply to whom ("*" is every signed-in user and
// crosses "/"), and what a scope lets through (deny wins; a server pattern
// covers the server, a tool pattern its tools only).
func TestScope(t *testing.T) {
	for _, tc := range []struct {
		rule config.PolicyRule
		id   authn.Identity
		want bool
	}{
		{config.PolicyRule{Users: []string{"*"}}, authn.Identity{User: "alice"}, true},
		{config.PolicyRule{Users: []string{"*"}}, authn.Identity{Teams: []string{"a"}}, false},
		{config.PolicyRule{Users: []string{"*"}}, authn.Identity{User: "org/alice"}, true},
		{config.PolicyRule{Teams: []string{"org/*"}}, authn.Identity{User: "bob", Teams: []string{"org/data"}}, true},
		{config.PolicyRule{Teams: []string{"org/*"}}, authn.Identity{User: "bob", Teams: []string{"other/data"}}, false},
		{config.PolicyRule{Teams: []string{"*"}}, authn.Identity{User: "bob"}, false},
		{config.PolicyRule{Users: []string{"al?ce"}, Teams: []string{"x"}}, authn.Identity{User: "alice"}, true},
		{config.PolicyRule{Users: []string{"alice"}}, authn.Identity{}, false},
	} {
		if got := ruleMatches(tc.rule, tc.id); got != tc.want {
			t.Errorf("rule users %q teams %q for %+v: %v, want %v", tc.rule.Users, tc.rule.Teams, tc.id, got, tc.want)
		}
	}

	pol, err := newPolicy(&config.Policy{Rules: []config.PolicyRule{
		{Teams: []string{"a"}, Allow: []string{"math", "text__upper"}, Deny: []string{"math__divide"}},
		{Users: []string{"alice"}, Deny: []string{"notes"}, Allow: []string{"notes"}},
	}}, []string{"math", "text", "notes"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := pol.scopeOf(authn.Identity{User: "alice", Teams: []string{"a"}})
	for name, want := range map[string]bool{"math__add": true, "math__divide": false, "text__upper": true, "text__lower": false, "notes__read": false} {
		server, _, _ := strings.Cut(name, "__")
		if got := sc.tool(tool.Tool{Name: name, Server: server}); got != want {
			t.Errorf("tool %s in scope: %v, want %v", name, got, want)
		}
	}
	for server, want := range map[string]bool{"math": true, "text": false, "notes": false} {
		if got := sc.server(server); got != want {
			t.Errorf("server %s in scope: %v, want %v", server, got, want)
		}
	}
	if anon := pol.scopeOf(authn.Identity{}); anon.server("math") || anon.tool(tool.Tool{Name: "math__add", Server: "math"}) {
		t.Error("an anonymous caller without an anonymous rule sees math")
	}
}
