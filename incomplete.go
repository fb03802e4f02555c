package toolsift

import (
	"context"
	"time"

	"github.com/toolsift/toolsift/think"
)

// DefaultConnectWait is how long a step, a search or a call waits at most
// for servers still connecting when Options.ConnectWait is 0: long enough
// for a server that is slow to start (a Node server's first run takes a
// second or two), short enough for a client that answers a person.
const DefaultConnectWait = 5 * time.Second

// await waits, within Options.ConnectWait, for the servers still
// connecting for the first time in ctx's scope, and returns what is still
// missing then: nil when every server's tools are listed (at once, for a
// Toolset without a Hub, or whose servers were all listed from the
// cache or waited for by Open).
func (ts *Toolset) await(ctx context.Context) *think.Incomplete {
	if ts.hub == nil {
		return nil
	}
	ts.waitFor(ctx)
	return think.NewIncomplete(ts.hub.Unlisted(ctx))
}

// waitFor waits, within Options.ConnectWait, for the servers still
// connecting that names stand for (every one, with none: see
// upstream.Hub.WaitListed), and returns those still connecting.
func (ts *Toolset) waitFor(ctx context.Context, names ...string) []string {
	var wctx context.Context
	var cancel context.CancelFunc
	if ts.wait < 0 {
		wctx, cancel = context.WithCancel(ctx)
		cancel() // no wait: look, and report who is still connecting
	} else {
		wctx, cancel = context.WithTimeout(ctx, ts.wait)
	}
	defer cancel()
	return ts.hub.WaitListed(wctx, names...)
}

// Unlisted returns the servers whose tools are not listed: those still
// connecting for the first time (over a Hub of HubOptions.Background:
// upstream.Hub.Unlisted) and those that failed; nil for a Toolset whose
// servers are all listed, and for one made by New. It does not wait.
// What a step, a search or an explanation says of them
// (think.Incomplete) is this.
func (ts *Toolset) Unlisted(ctx context.Context) *think.Incomplete {
	if ts.hub == nil {
		return nil
	}
	return think.NewIncomplete(ts.hub.Unlisted(ctx))
}
