// Package anthropic is an agent.Model for Anthropic's Messages API, built on
// github.com/anthropics/anthropic-sdk-go. It lives in its own package so that
// users of agent who do not need it do not compile that SDK.
//
// The model converts the agent's conversation to the Messages shape (system
// blocks, tool_use and tool_result blocks, parallel calls), places
// cache_control breakpoints where the prompt stays the same between steps
// (see Model), reports cache reads and writes in agent.Usage, streams with
// server-sent events into agent.Request.OnDelta, and can let Anthropic's MCP
// connector call remote servers whose enabled tools toolsift chooses at
// every step (see MCPServer).
//
//	model, err := anthropicmodel.New("claude-sonnet-4-5", &anthropicmodel.Options{Stream: true})
//	if err != nil { ... }
//	a, err := agent.New(model, toolset, nil)
package anthropicmodel
