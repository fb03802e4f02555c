package config_test

import (
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/toolsift/toolsift/config"
)

// A VS Code mcp.json, with a comment, a trailing comma and an input whose
// value the caller supplies instead of a prompt.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "mcp.json")
	err = os.WriteFile(file, []byte(`{
  "inputs": [{"type": "promptString", "id": "token", "password": true}],
  "servers": {
    // A stdio server that needs the token.
    "github": {"command": "github-mcp-server", "args": ["stdio"], "env": {"GITHUB_TOKEN": "${input:token}"},},
    "docs": {"type": "http", "url": "https://mcp.example.com/mcp"},
  },
}`), 0o644)
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := config.Load(file, &config.Options{Inputs: map[string]string{"token": "ghp_example"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		fmt.Printf("%s: %v\n", name, cfg.Servers[name])
	}
	// Output:
	// docs: http https://mcp.example.com
	// github: stdio "github-mcp-server" with 1 arg, env GITHUB_TOKEN
}

// A team gateway's policy (toolsift serve --policy): the data team sees
// postgres but its drop_ tools; a mistake is an error at file:line:col.
func ExampleParsePolicy() {
	pol, err := config.ParsePolicy("policy.json", []byte(`{
  "rules": [
    {"teams": ["data"], "allow": ["postgres"], "deny": ["postgres__drop_*"]},
  ],
  // callers without an identity
  "anonymous": {"allow": ["docs"]}
}`))
	if err != nil {
		log.Fatal(err)
	}
	r := pol.Rules[0]
	fmt.Println(r.At, r.Teams, r.Allow, r.Deny, pol.Anonymous.Allow)

	_, err = config.ParsePolicy("policy.json", []byte(`{"rules": [{"teams": ["data"], "allow": ["postgres["]}]}`))
	fmt.Println(err)
	// Output:
	// policy.json:3:5 [data] [postgres] [postgres__drop_*] [docs]
	// config: invalid: policy.json:1:42: rule 1: field "allow": pattern glob "postgres[": syntax error in pattern
}
