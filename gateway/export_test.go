package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// The proxy's internals, for the tests of package gateway_test that drive
// its go-sdk servers directly (in memory, over a Toolset the test opened).

type (
	Proxy        = proxy
	ProxyOptions = proxyOptions
)

var NewClientRequests = newClientRequests

// NewProxy is newProxy over a Toolset and the Hub it was opened over.
func NewProxy(ts *toolsift.Toolset, hub *upstream.Hub, o *ProxyOptions) (*Proxy, error) {
	if ts == nil { // a nil *toolsift.Toolset is a non-nil toolset
		return newProxy(nil, hub, o)
	}
	return newProxy(ts, hub, o)
}

const ServerLogLevel = serverLogLevel

func (p *proxy) NewServer() *mcp.Server              { return p.newServer() }
func (p *proxy) Handler(o *HTTPOptions) http.Handler { return p.handler(o) }
func (p *proxy) ToolsChanged()                       { p.toolsChanged() }
func (p *proxy) ResourceUpdated(server, uri string)  { p.resourceUpdated(server, uri) }
func (p *proxy) Warnings() []string                  { return p.pinWarnings() }
func (p *proxy) Search(ctx context.Context, query string, k int) (think.SearchAnswer, []tool.Tool, error) {
	return p.searchAnswer(ctx, query, k)
}

// NewServer is a session's server of g, for tests that connect a go-sdk
// client in memory.
func (g *Gateway) NewServer() *mcp.Server { return g.p.newServer() }

// SetSessionGrace sets how long a server may go without a session before
// it is forgotten (sessionGrace).
func (g *Gateway) SetSessionGrace(d time.Duration) {
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	g.p.grace = d
}

// SetSharedLimitWait sets how long a request waits for a shared rate-limit
// bucket before it counts in the replica's own (sharedWait), before g
// serves: tests on a loaded machine wait as long as it takes.
func (g *Gateway) SetSharedLimitWait(d time.Duration) { g.p.limits.wait = d }

// SetSharedLimitPause sets how long the store is not asked after a shared
// take failed (sharedPause; a negative d: not at all), and asks it again
// from the next take.
func (g *Gateway) SetSharedLimitPause(d time.Duration) {
	g.p.limits.pause.Store(int64(d))
	g.p.limits.until.Store(0)
}
