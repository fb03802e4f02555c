package main

import (
	"errors"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/anthropicmodel"
)

// errNoAnthropicKey explains how to configure the Anthropic model.
var errNoAnthropicKey = errors.New(`no Anthropic API key configured. Set one of:
  ANTHROPIC_API_KEY=sk-ant-...                 to use api.anthropic.com
  ANTHROPIC_BASE_URL=http://localhost:8080     (or --base-url) for a compatible server (a proxy, a gateway);
                                               ANTHROPIC_API_KEY is then optional
and pick the model with --model (for example claude-sonnet-4-5)`)

// newAnthropicModel is run's model for --api anthropic: the Messages API at
// baseURL (default $ANTHROPIC_BASE_URL, else api.anthropic.com), read from
// this command's environment, streaming or not, and the base URL it
// reaches. The run command's API switch calls it.
func newAnthropicModel(e *env, model, baseURL string, stream bool) (agent.Model, string, error) {
	if baseURL == "" {
		baseURL = e.getenv("ANTHROPIC_BASE_URL")
	}
	key := e.getenv("ANTHROPIC_API_KEY")
	if baseURL == "" && key == "" {
		return nil, "", errNoAnthropicKey
	}
	if baseURL == "" {
		baseURL = anthropicmodel.DefaultBaseURL
	}
	m, err := anthropicmodel.New(model, &anthropicmodel.Options{BaseURL: baseURL, APIKey: key, Stream: stream})
	return m, baseURL, err
}
