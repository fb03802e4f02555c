package gateway

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/think"
)

// Rate limits (config.PolicyLimit, in the rules of Options.Policy): each
// limit is a set of token buckets, one per key (By: the caller's user,
// team, the called server or tool), each holding Burst tokens (default
// the count) and refilling at the count per Per. A tool call (proxy.call: listed, through
// call_tool, where the inner tool is the one counted, or by name) takes a
// token of every limit of the caller's rules that counts it, before its
// upstream is reached; a search_tools call, of every limit of searches.
// A request one of them refuses takes none (the others are given back)
// and is answered with a tool error result naming the limit and the
// seconds to wait, audited and counted as rate-limited.
//
// The buckets live in this process: each replica of a gateway enforces
// each limit on its own. A reloaded policy (setPolicy) keeps the buckets
// of every limit whose rule's users and teams and whose fields did not
// change.

// maxBuckets bounds the buckets of one limit. Past it the buckets that
// have refilled (which a fresh bucket would equal) are dropped, and, when
// none has, an arbitrary one is (its key starts afresh).
const maxBuckets = 16384

// limiter is one limit of a policy, with its buckets.
type limiter struct {
	lim  config.PolicyLimit
	name string // the limit's label: its Name, or "rule N limit M"
	kind string // "call" or "search"
	rule config.PolicyRule
	anon bool    // a limit of the anonymous rule
	sig  string  // what must be equal for a reloaded limit to keep its buckets
	rate float64 // tokens a second
	size float64 // the most a bucket holds

	// what By names: each is part of a bucket's key
	users, teams, servers, tools bool

	mu      sync.Mutex
	buckets map[string]*tokenBucket
}

// tokenBucket is one key's bucket of a limiter: its tokens at last.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

// newLimiters compiles the limits of src's rules, each checked, reusing
// the limiters of old (the policy in force, or nil) whose signature is
// the same.
func newLimiters(src *config.Policy, old *policy) ([]*limiter, error) {
	reuse := map[string]*limiter{}
	if old != nil {
		for _, l := range old.limits {
			reuse[l.sig] = l
		}
	}
	var out []*limiter
	names := map[string]bool{}
	add := func(r config.PolicyRule, what string) error {
		for i, lim := range r.Limits {
			at := cmp.Or(lim.At, cmp.Or(r.At, "policy"))
			if err := lim.Check(); err != nil {
				return fmt.Errorf("%w: %s: %s limit %d: %v", ErrOptions, at, what, i+1, err)
			}
			name := cmp.Or(lim.Name, fmt.Sprintf("%s limit %d", what, i+1))
			if names[name] {
				return fmt.Errorf("%w: %s: %s limit %d: the name %q is another limit's", ErrOptions, at, what, i+1, name)
			}
			names[name] = true
			kind := "call"
			if lim.Searches > 0 {
				kind = "search"
			}
			by := lim.By
			if by == nil {
				by = []string{"user"}
			}
			sig := fmt.Sprintf("%q|%q|%q|%d|%d|%d|%d|%q|%q|%s", name, r.Users, r.Teams, lim.Calls, lim.Searches, lim.Per, lim.Burst, lim.Tools, by, what)
			if l, ok := reuse[sig]; ok {
				delete(reuse, sig)
				out = append(out, l)
				continue
			}
			size := lim.Burst
			if size == 0 {
				size = max(lim.Calls, lim.Searches)
			}
			out = append(out, &limiter{
				lim: lim, name: name, kind: kind, rule: r, anon: what == "anonymous", sig: sig,
				rate: float64(max(lim.Calls, lim.Searches)) / lim.Per.Seconds(), size: float64(size),
				users: slices.Contains(by, "user"), teams: slices.Contains(by, "team"),
				servers: slices.Contains(by, "server"), tools: slices.Contains(by, "tool"),
				buckets: map[string]*tokenBucket{},
			})
		}
		return nil
	}
	for i, r := range src.Rules {
		if err := add(r, fmt.Sprintf("rule %d", i+1)); err != nil {
			return nil, err
		}
	}
	if a := src.Anonymous; a != nil {
		if err := add(*a, "anonymous"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// counts reports whether l counts a call of the qualified tool name of
// server (a search when name is "").
func (l *limiter) counts(server, name string) bool {
	if name == "" {
		return l.kind == "search"
	}
	if l.kind != "call" {
		return false
	}
	if len(l.lim.Tools) == 0 {
		return true
	}
	return slices.ContainsFunc(l.lim.Tools, func(g string) bool {
		if strings.Contains(g, "__") {
			return glob(g, name)
		}
		return glob(g, server)
	})
}

// key is the bucket of id's call of name on server under l.
func (l *limiter) key(id authn.Identity, server, name string) string {
	var b strings.Builder
	if l.users {
		b.WriteString(id.User)
	}
	b.WriteByte(0)
	if l.teams {
		i := slices.IndexFunc(id.Teams, func(t string) bool { return t != "" && anyMatch(l.rule.Teams, t) })
		if i >= 0 {
			b.WriteString("t:" + id.Teams[i])
		} else {
			b.WriteString("u:" + id.User)
		}
	}
	b.WriteByte(0)
	if l.servers {
		b.WriteString(server)
	}
	b.WriteByte(0)
	if l.tools {
		b.WriteString(name)
	}
	return b.String()
}

// take takes a token of key's bucket at now; without one it reports how
// long until there is.
func (l *limiter) take(key string, now time.Time) (ok bool, retry time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.evict(now)
		}
		b = &tokenBucket{tokens: l.size, last: now}
		l.buckets[key] = b
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(l.size, b.tokens+d.Seconds()*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// give gives back the token take took of key's bucket.
func (l *limiter) give(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.buckets[key]; b != nil {
		b.tokens = math.Min(l.size, b.tokens+1)
	}
}

// evict drops the buckets that are full at now, or one when none is.
func (l *limiter) evict(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.size {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxBuckets {
		for k := range l.buckets {
			delete(l.buckets, k)
			break
		}
	}
}

// limitsOf are the limiters of the rules that match id (of the
// anonymous rule, for no identity).
func (pol *policy) limitsOf(id authn.Identity) []*limiter {
	var out []*limiter
	for _, l := range pol.limits {
		if l.anon == id.IsZero() && (l.anon || ruleMatches(l.rule, id)) {
			out = append(out, l)
		}
	}
	return out
}

// limited takes a token of each limit of the caller's rules that counts a
// call of name (a search: name ""), and returns the refusal of the first
// that has none, which gives the others theirs back; nil when it may go on.
func (p *proxy) limited(ctx context.Context, name string) *refusal {
	pol := p.policy.Load()
	if pol == nil || len(pol.limits) == 0 {
		return nil
	}
	id, _ := authn.IdentityFrom(ctx)
	server, _, _ := strings.Cut(name, "__") // as policy patterns read names: no catalog is asked
	var taken []*limiter
	var keys []string
	now := time.Now()
	for _, l := range pol.scopeOf(id).limits {
		if !l.counts(server, name) {
			continue
		}
		k := l.key(id, server, name)
		if ok, retry := l.take(k, now); !ok {
			for i, t := range taken {
				t.give(keys[i])
			}
			return &refusal{l: l, retry: retry}
		}
		taken, keys = append(taken, l), append(keys, k)
	}
	return nil
}

// refusal is a request a limit refused.
type refusal struct {
	l     *limiter
	retry time.Duration
}

// seconds is the whole seconds to wait, at least 1.
func (r *refusal) seconds() int {
	return max(1, int(math.Ceil(r.retry.Seconds())))
}

// result is the refusal's answer: a tool error result, which the model
// sees and can wait on, as it sees every other failed call.
func (r *refusal) result(what string) *mcp.CallToolResult {
	n, unit := r.l.lim.Calls, "calls"
	if r.l.kind == "search" {
		n, unit = r.l.lim.Searches, "searches"
	}
	return errorResult("%s: rate limited by the gateway's limit %q (%d %s per %s, %s); retry in %d s",
		what, r.l.name, n, unit, period(r.l.lim.Per), burst(r.l), r.seconds())
}

func burst(l *limiter) string {
	return "burst " + strconv.Itoa(int(l.size))
}

// period writes d as a Go duration without its zero tail ("1m", not "1m0s").
func period(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// refuseLimited answers a request r refused: logged, audited (outcome
// rate-limited) and counted. name is the tool called, or search_tools.
func (p *proxy) refuseLimited(ctx context.Context, ss *mcp.ServerSession, name string, r *refusal) *mcp.CallToolResult {
	p.logger(ctx, ss).LogAttrs(ctx, slog.LevelWarn, "rate limited", slog.String("tool", name), slog.String("limit", r.l.name),
		slog.String("outcome", "rate-limited"), slog.Int("retry_s", r.seconds()))
	rec := audit.Record{Time: time.Now(), Tool: name, Outcome: "rate-limited"}
	if name != think.SearchToolName {
		if t, ok := p.ts.Get(name); ok {
			rec.Server, rec.UpstreamTool = t.Server, t.OriginalName
		}
	}
	audit.Report(ctx, rec)
	p.metrics.rateLimited(ctx, r.l.kind, r.l.name, rec.Server)
	return r.result(name)
}
