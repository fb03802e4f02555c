package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/openaimodel"
	"github.com/toolsift/toolsift/provider"
)

// apis are the values of `toolbench run --api`.
var apis = []string{"chat", "responses", "anthropic"}

// newModel returns the chat model of --api, with the endpoint's base URL to
// show. Each API resolves its own endpoint (its environment variables, its
// default URL); an OpenAI-compatible one that has none says how to set one
// (errNoEndpoint).
func newModel(e *env, api, model, baseURL string, stream bool, hosted []openaimodel.HostedMCP) (agent.Model, string, error) {
	if len(hosted) > 0 && api != "responses" {
		return nil, "", fmt.Errorf("--hosted needs --api responses (the %s API has no hosted MCP servers here)", api)
	}
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
			m, err = openaimodel.NewChat(model, &openaimodel.ChatOptions{Options: endpoint, Stream: stream})
		} else {
			m, err = openaimodel.NewResponses(model, &openaimodel.ResponsesOptions{Options: endpoint, Stream: stream, Hosted: hosted})
		}
		return m, endpoint.BaseURL, err
	case "anthropic":
		return newAnthropicModel(e, model, baseURL, stream)
	}
	return nil, "", fmt.Errorf("--api %q: want chat, responses or anthropic", api)
}

// hostedFlag is --hosted SERVER=URL (repeatable): a server of the config
// that the Responses API reaches itself at URL.
func hostedFlag(fs *flag.FlagSet) *[]openaimodel.HostedMCP {
	var hosted []openaimodel.HostedMCP
	fs.Func("hosted", "with --api responses, a config `SERVER=URL` the provider calls itself (its mcp tool, allowed_tools chosen per step; no headers are sent; repeatable)", func(s string) error {
		name, url, ok := strings.Cut(s, "=")
		switch {
		case !ok || name == "" || url == "":
			return fmt.Errorf("want SERVER=URL, got %q", s)
		case !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://"):
			return fmt.Errorf("%s: the URL must be http(s), got %q", name, url)
		}
		hosted = append(hosted, openaimodel.HostedMCP{Server: name, URL: url})
		return nil
	})
	return &hosted
}

// checkHosted reports a --hosted server that is not one of the config's.
func checkHosted(hosted []openaimodel.HostedMCP, servers []string, config string) error {
	for _, h := range hosted {
		if !slices.Contains(servers, h.Server) {
			return fmt.Errorf("--hosted %s: %s has no server %q", h.Server, config, h.Server)
		}
	}
	return nil
}
