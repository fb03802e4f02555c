package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/mcp"
	"github.com/toolsift/toolsift/tool"
)

// loadToolsQualified reads a tools.jsonl file with dataset.LoadTools. When
// tool names repeat across servers (as in a catalog of many MCP servers),
// every tool that has a server is renamed to mcp.QualifiedName(server,
// name), the name an mcp.Hub would send it under.
func loadToolsQualified(e *env, path string) ([]tool.Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	type rec struct{ Server, Name string }
	seen := map[string]bool{}
	dup := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r rec
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Name == "" {
			continue // dataset.ReadTools reports it, with its line
		}
		if seen[r.Name] {
			dup++
		}
		seen[r.Name] = true
	}
	if dup == 0 {
		return dataset.LoadTools(path)
	}
	fmt.Fprintf(e.stderr, "note: %d tools share their name with another server's tool; naming every tool server__name as an MCP hub would\n", dup)
	var out bytes.Buffer
	sc = bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var m map[string]json.RawMessage
		var r rec
		if json.Unmarshal(line, &m) == nil && json.Unmarshal(line, &r) == nil && r.Server != "" && r.Name != "" {
			m["original_name"], _ = json.Marshal(r.Name)
			m["name"], _ = json.Marshal(mcp.QualifiedName(r.Server, r.Name))
			line, _ = json.Marshal(m)
		}
		out.Write(line) // one line out per line in, so errors keep their line numbers
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dataset: %s: %w", path, err)
	}
	return dataset.ReadTools(&out, path)
}
