package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// search answers search_tools.
func (s *session) search(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	p := s.p
	a, err := think.ParseSearchArgs(orEmpty(req.Params.Arguments))
	if err != nil {
		p.metrics.searched(time.Since(start), 0, err)
		return errorResult("%v", err), nil
	}
	if r := p.limited(ctx, ""); r != nil { // ratelimit.go
		return p.refuseLimited(ctx, req.Session, think.SearchToolName, r), nil
	}
	ans, tools, err := p.tracedSearch(ctx, a.Query, a.K)       // trace.go
	p.metrics.searched(time.Since(start), len(ans.Tools), err) // metrics.go
	if err != nil {
		p.logger(ctx, req.Session).Warn("search", "query", a.Query, "k", a.K, "error", err, "duration", time.Since(start))
		if errors.Is(err, retrieval.ErrSearch) {
			return errorResult("search_tools: %v", err), nil
		}
		return nil, err
	}
	p.searched(ctx, a.Query, tools) // learn.go
	added, evicted := s.list(tools)
	ans.Listed = len(tools) > 0 && s.listed(tools)
	b, err := p.answerJSON(ans) // answer.go
	if err != nil {
		return nil, fmt.Errorf("search_tools: encode answer: %w", err)
	}
	if p.log.Enabled(ctx, slog.LevelInfo) { // its attributes are built only for a line that is written
		found := make([]string, len(ans.Tools))
		for i, t := range ans.Tools {
			found[i] = fmt.Sprintf("%s=%.3f", t.Name, t.Score)
		}
		p.logger(ctx, req.Session).Info("search", "query", a.Query, "k", a.K, "tools", found, "omitted", len(ans.Omitted),
			"tokens", ans.Tokens, "added", len(added), "evicted", len(evicted), "duration", time.Since(start))
		if in := ans.Incomplete; in != nil {
			var login []string
			for _, l := range in.Login {
				login = append(login, l.Server)
			}
			p.logger(ctx, req.Session).Info("search incomplete", "query", a.Query, "connecting", in.Connecting, "failed", in.Failed, "login", login)
		}
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// searchAnswer answers search_tools for query and k without a session: the
// Toolset's Think step finds the tools and fits them into Options.Search.Budget
// (think.Thinker.Find), passing over quarantined tools (quarantine.go),
// after waiting for the servers still connecting in the caller's scope
// (toolsift.Options.ConnectWait), which the answer names with those that
// failed (think.SearchAnswer.Incomplete).
// Their texts reach the client escaped (sanitize.go) by answerJSON. It
// returns the answer and the found tools, best first.
func (p *proxy) searchAnswer(ctx context.Context, query string, k int) (think.SearchAnswer, []tool.Tool, error) {
	q, a := p.quarantine(), p.access(ctx)
	var skip func(string) bool // nil: nothing skipped, and the scans ask no filter about each candidate
	if len(q) > 0 {
		skip = q.has
	}
	if a != nil { // out of the caller's scope: never ranked, counted or omitted (policy.go)
		skip = func(name string) bool { return !a.vis[name] || q.has(name) }
		// nor waited for or named as connecting or failed: a server none
		// of whose tools the caller may reach
		ctx = upstream.WithServerScope(ctx, a.sc.reaches)
	}
	ans, tools, err := p.ts.Find(p.usageCaller(ctx), query, k, p.opts.Search.Budget, skip) // the caller's usage memory (learn.go)
	if in := ans.Incomplete; err == nil && in != nil && len(in.Failed) > 0 {
		// A per-user server nobody has logged in to yet did not fail:
		// its tools join at the first login (peruser.go).
		if failed, login := p.perUser.pending(ctx, in.Failed); len(login) > 0 {
			ans.Incomplete = think.NewIncompleteLogin(in.Connecting, failed, login)
		}
	}
	return ans, tools, err
}

// errorResult is a tool result that tells the model what went wrong.
func errorResult(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}},
		IsError: true,
	}
}

// orEmpty is raw, or an empty object when raw is empty or null.
func orEmpty(raw json.RawMessage) json.RawMessage {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}
