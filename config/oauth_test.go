package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/config"
)

func TestLoadConfigOAuth(t *testing.T) {
	t.Setenv("NOTES_SECRET", "s3cret")
	cfg, err := load(t, `{"mcpServers": {
		"notes": {"url": "https://notes.example/mcp", "oauth": {"clientId": "toolsift-cli", "clientSecret": "${env:NOTES_SECRET}",
			"scopes": ["notes:read", "notes:write"], "callbackPort": 8765, "color": "red"}},
		"cimd": {"url": "https://cimd.example/mcp", "oauth": {"clientMetadataUrl": "https://app.example/client.json", "scopes": "a b"}},
		"plain": {"url": "https://plain.example/mcp"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*config.OAuth{
		"notes": {ClientID: "toolsift-cli", ClientSecret: "s3cret", Scopes: []string{"notes:read", "notes:write"}, CallbackPort: 8765},
		"cimd":  {ClientMetadataURL: "https://app.example/client.json", Scopes: []string{"a", "b"}},
		"plain": nil,
	}
	got := map[string]*config.OAuth{}
	for name, sc := range cfg.Servers {
		got[name] = sc.OAuth
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OAuth (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`mcp.json:3:67: server "notes": field "oauth": unknown field "color" ignored`}, cfg.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if s := cfg.Servers["notes"].String(); s != "http or sse https://notes.example" {
		t.Errorf("String() = %q: it must not show the client secret", s)
	}

	for _, tc := range []struct{ name, text, want string }{
		{"not an object", `{"mcpServers": {"x": {"url": "http://h/", "oauth": "id"}}}`, `config: invalid: mcp.json:1:52: server "x": field "oauth": want an object, got string`},
		{"bad port", `{"mcpServers": {"x": {"url": "http://h/", "oauth": {"callbackPort": 70000}}}}`, `config: invalid: mcp.json:1:69: server "x": field "oauth": "callbackPort": want a port number (0 to 65535)`},
		{"secret without id", `{"mcpServers": {"x": {"url": "http://h/", "oauth": {"clientSecret": "s"}}}}`, `config: invalid: mcp.json:1:52: server "x": field "oauth": "clientSecret" needs "clientId"`},
		{"needs url", `{"mcpServers": {"x": {"command": "a", "oauth": {}}}}`, `config: invalid: mcp.json:1:17: server "x": "oauth" needs "url"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.text, nil)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}
