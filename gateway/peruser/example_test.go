package peruser_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/gateway/peruser"
	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/store"
)

// A remote server reached with each user's own OAuth login: the login
// pages are served beside the gateway's /mcp, and a user's calls carry
// that user's token. The authentication in front (here a header naming the
// user) sets each request's Identity.
func ExampleLogins_Handler() {
	ctx := context.Background()
	// The remote server, behind its own authorization server; its tool
	// says whose token called it.
	mail := mcp.NewServer(&mcp.Implementation{Name: "mail", Version: "1"}, nil)
	mcp.AddTool(mail, &mcp.Tool{Name: "whoami", Description: "Whose mailbox is this?"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.TokenInfo.UserID}}}, nil, nil
		})
	remote := oauthtest.New(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mail }, nil), nil)
	defer remote.Close()

	// The gateway's public URL comes first: it is in the logins' redirect URI.
	var handler atomic.Pointer[http.Handler]
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-User"); u != "" { // stands for real authentication
			r = r.WithContext(authn.WithIdentity(r.Context(), authn.Identity{User: u}))
		}
		(*handler.Load()).ServeHTTP(w, r)
	}))
	defer web.Close()
	key := make([]byte, peruser.LoginKeySize) // kept in a file or a secret store, never in the Store
	rand.Read(key)
	cfg := &config.Config{Servers: map[string]config.Server{"mail": {URL: remote.URL, Type: "http"}}}
	logins, err := peruser.New(ctx, cfg, &peruser.Options{
		Servers:   []string{"mail"},
		Store:     store.NewMemory(), // store.Dir or a shared store for replicas
		LoginKey:  key,
		PublicURL: web.URL,
	})
	if err != nil {
		log.Fatal(err)
	}
	gw, err := gateway.Open(ctx, cfg, &gateway.Options{
		Toolset: toolsift.Options{Store: store.NewMemory(), Logger: slog.New(slog.DiscardHandler)},
		PerUser: logins,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer gw.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", gw.Handler())
	mux.Handle("/", logins.Handler())
	var h http.Handler = mux
	handler.Store(&h)

	// Alice's MCP client calls the tool before she logged in: the result
	// is the link to open.
	client := &http.Client{Transport: header{"X-User", "alice", http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: web.URL + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	whoami := func() string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: gateway.CallToolName, Arguments: map[string]any{"name": "mail__whoami"}})
		if err != nil {
			log.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	link := regexp.MustCompile(`http://\S+/login/mail\?ticket=\S+`).FindString(whoami())
	fmt.Println("login link:", strings.Replace(link[:strings.Index(link, "?")], web.URL, "PUBLIC_URL", 1))

	// Her browser opens it (the authorization page approves at once).
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Transport: header{oauthtest.UserHeader, "alice", http.DefaultTransport}}
	resp, err := browser.Get(link)
	if err != nil {
		log.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("page:", regexp.MustCompile(`Logged in to \w+ as \w+`).FindString(string(page)))
	fmt.Println("whoami:", whoami())
	// Output:
	// login link: PUBLIC_URL/login/mail
	// page: Logged in to mail as alice
	// whoami: alice
}

// header adds one header to each request.
type header struct {
	key, value string
	next       http.RoundTripper
}

func (h header) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return h.next.RoundTrip(r)
}
