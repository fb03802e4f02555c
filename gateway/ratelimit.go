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
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/store"
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
// Over a store that is a store.RateLimiter (store/postgres) a bucket is
// the store's, shared by every replica on it (sharedLimits): a limit then
// holds across them. Otherwise, and for a request whose shared bucket
// does not answer within sharedWait (the store failed or is slow; counted
// as a fallback, as is every request for sharedPause after), the bucket
// is this process's, each replica enforcing
// the limit on its own. A reloaded policy (setPolicy) keeps the buckets
// of every limit whose rule's users and teams and whose fields did not
// change; a changed limit's buckets, in memory and in the store (whose
// names hold its signature), start afresh.

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
	// every is the time one token takes to come back (1/rate), for the
	// shared buckets
	every time.Duration

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
				every: lim.Per / time.Duration(max(lim.Calls, lim.Searches)),
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
	var shared []bool
	now := time.Now()
	for _, l := range pol.scopeOf(id).limits {
		if !l.counts(server, name) {
			continue
		}
		k := l.key(id, server, name)
		ok, retry, fromStore := p.take(ctx, l, k, now)
		if !ok {
			for i, t := range taken {
				if shared[i] {
					p.limits.give(ctx, t, keys[i])
				} else {
					t.give(keys[i])
				}
			}
			return &refusal{l: l, retry: retry}
		}
		taken, keys, shared = append(taken, l), append(keys, k), append(shared, fromStore)
	}
	return nil
}

// sharedWait bounds the wait for a shared bucket's answer; after one
// that failed, the store is not asked again for sharedPause, so that a
// store that does not answer costs one request in each sharedPause the
// wait, not every request.
const (
	sharedWait  = 250 * time.Millisecond
	sharedPause = time.Second
)

// sharedLimits are the buckets of a store that is a store.RateLimiter,
// shared by every replica on it; the zero value has none. rl and wait
// are set before the proxy serves.
type sharedLimits struct {
	rl    store.RateLimiter // nil: none
	wait  time.Duration     // 0: sharedWait
	pause atomic.Int64      // nanoseconds; 0: sharedPause, < 0: none
	until atomic.Int64      // UnixNano before which the store is not asked
	down  atomic.Bool       // a take failed; its recovery not yet logged
}

// take takes a token of key's bucket under l: the shared one when there
// is one and it answers in time (fromStore), else this process's.
func (p *proxy) take(ctx context.Context, l *limiter, key string, now time.Time) (ok bool, retry time.Duration, fromStore bool) {
	if sl := &p.limits; sl.rl != nil {
		if now.UnixNano() >= sl.until.Load() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(sl.wait, sharedWait))
			retry, err := sl.rl.TakeToken(sctx, l.storeKey(key), 1, l.every, int(l.size))
			cancel()
			if err == nil {
				if sl.down.Load() && sl.down.CompareAndSwap(true, false) {
					p.log.Info("rate limits: the store's shared buckets answer again", slog.String("limit", l.name))
				}
				return retry == 0, retry, true
			}
			pause := time.Duration(cmp.Or(sl.pause.Load(), int64(sharedPause)))
			sl.until.Store(time.Now().Add(max(pause, 0)).UnixNano())
			if sl.down.CompareAndSwap(false, true) {
				p.log.Warn("rate limits: the store's shared buckets do not answer; limits are this replica's own until they do",
					slog.String("limit", l.name), slog.String("err", err.Error()))
			}
		}
		p.metrics.limitFallback(l.kind, l.name)
	}
	ok, retry = l.take(key, now)
	return ok, retry, false
}

// give gives back the token take took of key's shared bucket under l. A
// give the store does not take (it failed) is lost: the bucket holds one
// token less until it refills, never one too many.
func (sl *sharedLimits) give(ctx context.Context, l *limiter, key string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(sl.wait, sharedWait))
	defer cancel()
	_, _ = sl.rl.TakeToken(sctx, l.storeKey(key), -1, l.every, int(l.size))
}

// storeKey is the name of key's shared bucket under l: the limit's
// signature (a changed limit has other buckets) and key.
func (l *limiter) storeKey(key string) string {
	return "gateway/ratelimit\x00" + l.sig + "\x00" + key
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
