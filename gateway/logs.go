//lint:file-ignore SA1019 logging is deprecated by MCP 2026-07-28 (SEP-2577), but servers and clients of the earlier revisions use it, and the Hub and proxy pass it on.

package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/upstream"
)

// Upstream log messages (notifications/message) go to the client whose
// call, read or prompt caused them, as server→client requests do: the Hub
// hands those a server sends during a request to that request (upstream.WithLog),
// and the SDK passes them on at the level the client asked for
// (logging/setLevel; none before it asks). toolsift serve asks every
// upstream server for everything (serverLogLevel), since its clients'
// levels differ.

// serverLogLevel is what toolsift serve asks of upstream servers
// (upstream.HubOptions.serverLogLevel): every message, each client's own level
// filtering what it gets.
const serverLogLevel = "debug"

// withLogs passes the log messages of the upstream request made with ctx
// on to ss, on the stream of the client's request that ctx belongs to.
func withLogs(ctx context.Context, ss *mcp.ServerSession) context.Context {
	return upstream.WithLog(ctx, func(m upstream.LogMessage) {
		_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(m.Level), Logger: m.Logger, Data: m.Data})
	})
}
