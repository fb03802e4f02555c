package oauth_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// A server that needs a login fails at once, naming the command; after
// Login, the Hub uses the stored tokens.
func ExampleStore_Login() {
	srv := oauthtest.New(notesServer(), nil) // an MCP server behind OAuth
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "logins")
	defer os.RemoveAll(dir)
	logins, _ := store.NewDir(dir)
	auth, _ := oauth.New(&oauth.Options{Store: logins, LoginHint: "myapp login"})
	ctx := context.Background()
	cfg := &config.Config{Servers: map[string]config.Server{"notes": {URL: srv.URL, Type: "http"}}}

	connect := func() {
		hub, _ := upstream.NewHub(cfg, &upstream.HubOptions{Auth: auth, Store: store.NewMemory(), MaxRestarts: -1})
		defer hub.Close()
		hub.Connect(ctx, nil)
		st := hub.Status()[0]
		if st.Err != nil {
			msg := st.Err.Error()
			fmt.Println(msg[strings.Index(msg, `server "notes" needs`):])
			return
		}
		fmt.Println(st.State, st.Tools, "tools")
	}

	connect()
	grant, err := auth.Login(ctx, "notes", srv.URL, &oauth.LoginOptions{
		// A real application opens a browser; the test server's page
		// approves at once.
		Open: func(ctx context.Context, authURL string) error {
			go oauthtest.Browse(authURL)
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("scopes:", strings.Join(grant.Scopes, " "), "refreshable:", grant.Refreshable)
	connect()
	// Output:
	// server "notes" needs a login: not logged in; log in with: myapp login notes
	// scopes: mcp:tools offline_access refreshable: true
	// ready 2 tools
}
