// Package openai holds the agent's models for OpenAI's APIs and any
// compatible server (vLLM, Ollama, llama.cpp, LiteLLM, ...), built on
// openai-go: [Chat] speaks Chat Completions, [Responses] the Responses API
// (deferred tools with search_tools as the tool search, hosted MCP servers
// through [HostedMCP]). Both are agent.Model values; they live in their own
// package, beside agent/anthropicmodel, so that a program using the agent loop
// with another model compiles no OpenAI SDK.
//
//	model, err := openaimodel.NewChat("gpt-4o-mini", &openaimodel.ChatOptions{Stream: true}) // OPENAI_API_KEY, OPENAI_BASE_URL
//	if err != nil { ... }
//	a, err := agent.New(model, ts, nil)
//
// The endpoint follows package provider's rule (base URL, key, retries,
// from the environment when unset). Errors of Complete wrap agent.ErrModel;
// the API's own *openaimodel.Error stays reachable with errors.As.
package openaimodel

import "errors"

// ErrOptions reports Options that cannot reach an endpoint (no model name,
// a base URL that is not http(s), api.openai.com without a key, ...).
var ErrOptions = errors.New("openaimodel: invalid options")
