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
