// Command client is toolsift's client for the client scenarios of the MCP
// conformance suite (.ci/conformance/run): the suite starts a server for a
// scenario and runs `client URL` with the scenario's name in
// $MCP_CONFORMANCE_SCENARIO (and its context, such as a pre-registered
// client, as JSON in $MCP_CONFORMANCE_CONTEXT).
//
// It does what toolbench and toolsift serve do, through the public API
// only: a Hub over the one url server with an oauth.Store as its Auth
// (list); when the server needs a login, oauth's Login with an HTTP client
// playing the browser (it follows the authorization server's redirects to
// Login's loopback callback) and a new Hub (login → list); then the
// scenario's calls, logging in again when a call asks for more scope.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

const server = "conformance"

func main() {
	log.SetFlags(0)
	log.SetPrefix("client: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: client SERVER_URL (with $MCP_CONFORMANCE_SCENARIO set)")
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sctx map[string]any
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		if err := json.Unmarshal([]byte(c), &sctx); err != nil {
			log.Fatalf("$MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, scenario, url, sctx); err != nil {
		log.Fatalf("scenario %s: %v", scenario, err)
	}
}

// elicitAccept accepts every elicitation with its form: empty, and the
// Hub fills the schema's defaults (SEP-1034), or the given content.
type elicitAccept struct{ content string }

func (elicitAccept) Capabilities() upstream.ClientCapabilities {
	return upstream.ClientCapabilities{Elicitation: true}
}

func (e elicitAccept) HandleClientRequest(_ context.Context, req upstream.ClientRequest) (json.RawMessage, error) {
	if req.Method != upstream.MethodElicit {
		return nil, &upstream.RPCError{Code: -32600, Message: "this client answers elicitation only"}
	}
	content := e.content
	if content == "" {
		content = `{}`
	}
	return json.RawMessage(`{"action":"accept","content":` + content + `}`), nil
}

func run(ctx context.Context, scenario, url string, sctx map[string]any) error {
	// The run's logins, kept for this run only.
	logins, err := oauth.New(&oauth.Options{Store: store.NewMemory(), LoginHint: "client login"})
	if err != nil {
		return err
	}
	cfg := &config.Config{Servers: map[string]config.Server{server: {Type: "http", URL: url}}}
	login := &oauth.LoginOptions{Open: browse}
	if id, ok := sctx["client_id"].(string); ok {
		login.ClientID = id
		login.ClientSecret, _ = sctx["client_secret"].(string)
	}
	if strings.HasPrefix(scenario, "auth/") {
		// The suite's client metadata document URL, as the go-sdk's
		// reference client gives it (used only where the authorization
		// server supports CIMD).
		login.ClientMetadataURL = "https://conformance-test.local/client-metadata.json"
	}
	// $TOOLSIFT_CONFORMANCE_PROTOCOL: the revision the Hub asks for
	// ("latest" probes with server/discover: the 2026-07-28 suite).
	// The Hub's store in memory, for this run only: the suite's servers
	// reuse ports, and a list cached for another scenario's server at the
	// same URL would be taken for this one's (a lazy start trusts it).
	opts := &upstream.HubOptions{Auth: logins, Store: store.NewMemory(), ProtocolVersion: os.Getenv("TOOLSIFT_CONFORMANCE_PROTOCOL")}
	switch scenario {
	case "elicitation-sep1034-client-defaults":
		opts.ClientRequests = elicitAccept{}
	case "sep-2322-client-request-state":
		opts.ClientRequests = elicitAccept{`{"confirmed":true}`}
	}

	// list → login → list, then the scenario's call (→ login → call when
	// the server asks for more scope).
	for attempt := 0; ; attempt++ {
		hub, err := connect(ctx, cfg, opts)
		if err != nil {
			return err
		}
		err = hub.status()
		if err == nil {
			err = hub.scenario(ctx, scenario, sctx)
		}
		hub.Close()
		var le *oauth.LoginError
		if err == nil || !errors.As(err, &le) || attempt == 3 {
			return err
		}
		log.Printf("login needed: %v", err)
		if _, err := logins.Login(ctx, server, url, login); err != nil {
			return fmt.Errorf("login: %w", err)
		}
	}
}

type hub struct{ *upstream.Hub }

func connect(ctx context.Context, cfg *config.Config, opts *upstream.HubOptions) (hub, error) {
	h, err := upstream.NewHub(cfg, opts)
	if err != nil {
		return hub{}, err
	}
	if err := h.Connect(ctx, nil); err != nil {
		h.Close()
		return hub{}, err
	}
	return hub{h}, nil
}

// status is the server's error, if it did not connect.
func (h hub) status() error {
	for _, st := range h.Status() {
		if st.Err != nil {
			return st.Err
		}
	}
	return nil
}

// scenario makes the calls a scenario expects of a client, by the names its
// server lists.
func (h hub) scenario(ctx context.Context, scenario string, sctx map[string]any) error {
	if calls := h.calls(scenario, sctx); calls != nil {
		// Scenarios of 2026-07-28 that look at the requests a client
		// sends (headers, _meta, requestState): their tools may fail
		// on purpose, so a failed call is logged, not fatal.
		for _, c := range calls {
			res, err := c()
			log.Printf("%s: %v %v", scenario, res, err)
		}
		return nil
	}
	call := ""
	args := `{}`
	switch {
	case scenario == "tools_call":
		call, args = "add_numbers", `{"a":5,"b":3}`
	case scenario == "elicitation-sep1034-client-defaults":
		call = "test_client_elicitation_defaults"
	case scenario == "sse-retry":
		call = "test_reconnection"
	case strings.HasPrefix(scenario, "auth/"):
		call = "test-tool"
	}
	names := map[string]bool{}
	for _, t := range h.Tools() {
		names[t.Name] = true
	}
	if call == "" {
		return nil
	}
	name := upstream.QualifiedName(server, call)
	if !names[name] {
		return fmt.Errorf("the server lists no tool %s (%d tools)", call, len(names))
	}
	res, err := h.Call(ctx, name, json.RawMessage(args))
	if err != nil {
		return fmt.Errorf("call %s: %w", call, err)
	}
	if res.IsError {
		return fmt.Errorf("call %s: the tool failed: %s", call, res.Content)
	}
	log.Printf("%s: %s", call, res.Content)
	return nil
}

// calls are the requests of a 2026-07-28 scenario that looks at requests,
// as the go-sdk's reference client makes them; nil for other scenarios.
func (h hub) calls(scenario string, sctx map[string]any) []func() (any, error) {
	ctx := context.Background()
	tools := h.Tools()
	call := func(name, args string) func() (any, error) {
		return func() (any, error) { return h.Call(ctx, upstream.QualifiedName(server, name), json.RawMessage(args)) }
	}
	var out []func() (any, error)
	switch scenario {
	case "request-metadata", "json-schema-ref-no-deref":
		return []func() (any, error){}
	case "json-schema-2020-12-preservation":
		for _, t := range tools {
			if t.OriginalName == "json_schema_2020_12_tool" {
				out = append(out, call("json_schema_echo", `{"schema":`+string(t.InputSchema)+`}`))
			}
		}
	case "sep-2322-client-request-state":
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			out = append(out, call(name, `{}`))
		}
	case "http-standard-headers":
		if len(tools) > 0 {
			out = append(out, call(tools[0].OriginalName, `{}`))
		}
		pt := h.Passthrough()
		if rs := pt.Resources(ctx); len(rs) > 0 {
			out = append(out, func() (any, error) { return pt.ReadResource(ctx, rs[0].URI) })
		}
		if ps := pt.Prompts(ctx); len(ps) > 0 {
			out = append(out, func() (any, error) { return pt.GetPrompt(ctx, ps[0].Name, map[string]string{}) })
		}
	case "http-custom-headers":
		list, _ := sctx["toolCalls"].([]any)
		for _, item := range list {
			c, _ := item.(map[string]any)
			name, _ := c["name"].(string)
			args, _ := json.Marshal(c["arguments"])
			if string(args) == "null" {
				args = []byte(`{}`)
			}
			out = append(out, call(name, string(args)))
		}
	case "http-invalid-tool-headers":
		for _, t := range tools {
			out = append(out, call(t.OriginalName, `{"region":"us-west1"}`))
		}
	default:
		return nil
	}
	if out == nil {
		out = []func() (any, error){}
	}
	return out
}

// browse plays the user's browser: it follows the authorization server's
// redirects to Login's loopback callback.
func browse(ctx context.Context, authURL string) error {
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			log.Printf("browser: %v", err)
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Printf("browser: %v", err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	return nil
}
