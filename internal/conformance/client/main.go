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
	"github.com/toolsift/toolsift/mcp"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/store"
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

// elicitAccept accepts every elicitation with an empty form: the Hub
// fills the schema's defaults (SEP-1034).
type elicitAccept struct{}

func (elicitAccept) Capabilities() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{Elicitation: true}
}

func (elicitAccept) HandleClientRequest(_ context.Context, req mcp.ClientRequest) (json.RawMessage, error) {
	if req.Method != mcp.MethodElicit {
		return nil, &mcp.RPCError{Code: -32600, Message: "this client answers elicitation only"}
	}
	return json.RawMessage(`{"action":"accept","content":{}}`), nil
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
	opts := &mcp.HubOptions{Auth: logins}
	if scenario == "elicitation-sep1034-client-defaults" {
		opts.ClientRequests = elicitAccept{}
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
			err = hub.scenario(ctx, scenario)
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

type hub struct{ *mcp.Hub }

func connect(ctx context.Context, cfg *config.Config, opts *mcp.HubOptions) (hub, error) {
	h, err := mcp.NewHub(cfg, opts)
	if err != nil {
		return hub{}, err
	}
	if err := h.Connect(ctx); err != nil {
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
func (h hub) scenario(ctx context.Context, scenario string) error {
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
	name := mcp.QualifiedName(server, call)
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
