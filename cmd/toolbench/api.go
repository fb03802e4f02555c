package main

import (
	"errors"
	"fmt"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/provider"
)

// apis are the values of `toolbench run --api`.
var apis = []string{"chat", "responses", "anthropic"}

// errAnthropicNotBuilt is what --api anthropic says until the Anthropic
// model is wired into newModel.
var errAnthropicNotBuilt = errors.New("--api anthropic: the Anthropic Messages API is not built in this binary yet; use --api chat or --api responses")

// newModel returns the chat model of --api, with the endpoint's base URL to
// show. Each API resolves its own endpoint (its environment variables, its
// default URL); an OpenAI-compatible one that has none says how to set one
// (errNoEndpoint).
func newModel(e *env, api, model, baseURL string, stream bool) (agent.Model, string, error) {
	switch api {
	case "chat", "responses":
		// provider's one rule, read from this command's environment.
		endpoint, err := provider.Options{BaseURL: baseURL}.Resolve(e.getenv)
		if err != nil {
			if endpoint.BaseURL == provider.DefaultBaseURL {
				return nil, "", errNoEndpoint
			}
			return nil, "", err
		}
		var m agent.Model
		if api == "chat" {
			m, err = agent.NewOpenAI(model, &agent.OpenAIOptions{Options: endpoint, Stream: stream})
		} else {
			m, err = agent.NewResponses(model, &agent.ResponsesOptions{Options: endpoint, Stream: stream})
		}
		return m, endpoint.BaseURL, err
	case "anthropic":
		// "anth" (issue 22 part B): replace this case with the Anthropic
		// model (its endpoint rule, ANTHROPIC_API_KEY, --base-url) and
		// drop errAnthropicNotBuilt.
		return nil, "", errAnthropicNotBuilt
	}
	return nil, "", fmt.Errorf("--api %q: want chat, responses or anthropic", api)
}
