package tool

import (
	"encoding/json"
	"errors"
)

// Result is a tool call's outcome, rendered for a model.
type Result struct {
	// Content is the result as text: text blocks joined by newlines,
	// structuredContent as JSON (unless a text block already carries it),
	// and one summary line per image, audio clip or resource (type, MIME
	// type, size, URI — never the data itself).
	Content string
	// IsError is set when the tool itself reported a failure (MCP isError)
	// or the server answered the call with an error: the model should see
	// it and may try again differently.
	IsError bool
	// Structured is the result's structuredContent, if any.
	Structured json.RawMessage
	// Raw is the call's result as an MCP CallToolResult object (content
	// blocks with their annotations and data, structuredContent, _meta,
	// isError), for a proxy to forward unchanged. Sources fill it for every
	// call that returns no error; when the server answered with a
	// JSON-RPC error instead, Raw is the isError result carrying Content.
	Raw json.RawMessage
}

// Errors a call can fail with, whatever serves the tool. Sources (upstream.Hub,
// toolsift.Toolset) wrap them, with the tool and server at fault, so that a
// consumer such as the agent can tell the model what happened without
// knowing where tools come from.
var (
	// ErrUnknown: no tool of that name exists, nor ever did in this session.
	ErrUnknown = errors.New("unknown tool")
	// ErrUnavailable: the tool exists but its server is down, starting,
	// restarting or failed; a later call may succeed.
	ErrUnavailable = errors.New("tool temporarily unavailable")
	// ErrInvalidArguments: the arguments are not a JSON object.
	ErrInvalidArguments = errors.New("arguments are not a JSON object")
)
