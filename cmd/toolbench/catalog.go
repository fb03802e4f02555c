package main

import (
	"fmt"

	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// loadToolsQualified reads a tools.jsonl file; when tool names repeat
// across servers (as in a catalog of many MCP servers), every tool that has
// a server is named upstream.QualifiedName(server, name), the name an upstream.Hub
// would send it under (dataset.LoadToolsQualified), and a note says so.
func loadToolsQualified(e *env, path string) ([]tool.Tool, error) {
	tools, shared, err := dataset.LoadToolsQualified(path, upstream.QualifiedName)
	if shared > 0 {
		fmt.Fprintf(e.stderr, "note: %d tools share their name with another server's tool; naming every tool server__name as an MCP hub would\n", shared)
	}
	return tools, err
}
