package audit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/store"
)

// Record is what the audit log keeps of one tools/call: who called which
// tool of which server, when, for how long, and the outcome. Never the
// arguments, the result or a credential.
type Record struct {
	// Time is when the call began.
	Time time.Time `json:"time"`
	// User and Teams are the caller's Identity (authn.IdentityFrom); empty
	// for an anonymous caller (stdio, or HTTP with a shared token or none).
	User  string   `json:"user,omitempty"`
	Teams []string `json:"teams,omitempty"`
	// Tool is the tool's name as the client called it (server__tool; the
	// tool call_tool named, for a call through call_tool); Server and
	// UpstreamTool name it upstream, empty when no tool of the catalog has
	// that name.
	Tool         string `json:"tool"`
	Server       string `json:"server,omitempty"`
	UpstreamTool string `json:"upstream_tool,omitempty"`
	// Duration is how long the call took.
	Duration time.Duration `json:"duration_ns"`
	// Outcome is the word of the call's log line: ok, tool-error (the
	// tool answered with isError), invalid-arguments, unknown (no server
	// lists the tool), out-of-scope (a tool the caller's policy hides,
	// answered as one no server has), disabled (a tool its server's config
	// filters out, answered so too), quarantined (refused: the tool
	// changed since it was trusted), login-needed (a per-user server
	// without the caller's login), unavailable (its server down or
	// failed), cancelled (by the client), revoked (the caller's credential
	// was revoked, or its JWT expired, during the call, which was
	// cancelled upstream: authn.ErrRevoked), rate-limited (refused by a
	// rate limit of the policy before its upstream was asked; a refused
	// search too, as tool search_tools), or error (any other failure).
	// docs/serve.md, "Audit", says when each happens.
	Outcome string `json:"outcome"`
	// Session is the tag of the HTTP session (as log lines give it, never
	// its id); empty without one.
	Session string `json:"session,omitempty"`
}

// keyPrefix is the first segment of the audit records' keys:
// audit/YYYY-MM-DD/NANOS-RANDOM.json, the day and the Unix nanoseconds
// (19 digits) of the record's Time in UTC, so that keys sort by time, and
// 8 random bytes in hex, so that two replicas never write the same key.
const keyPrefix = "audit/"

// writeTimeout bounds one write of a record kept in memory (drain): a
// store that hangs is tried again later.
const writeTimeout = 10 * time.Second

// syncWait is how long a call's result waits for its record's write: a
// store that fails, or takes longer (a database that went away retries
// until its ctx ends), has the record kept in memory instead, and the
// call goes on.
const syncWait = 500 * time.Millisecond

// maxQueued is how many records a Log keeps in memory, waiting for its
// store: past it a record is lost, and logged.
const maxQueued = 10000

// Backoff of the writes of records kept in memory: from minBackoff,
// doubling, to maxBackoff.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// A Log is the audit log of a go-sdk server: its Middleware hands each
// tools/call request's handlers the means to Report the call they made,
// and the record is written to Store, and synced as the store syncs,
// before Report returns, so before the call's result does: a process
// killed at any moment has a record of every call whose result a client
// got.
//
// Unless the store cannot take it now: a write that fails, or takes
// longer than 500 ms (a database that went away), leaves the record in
// memory, and the call goes on; while records wait, the next calls' join
// them without trying the store. They are written, oldest first, as soon
// as the store answers again (tried again with a backoff from 100 ms to
// 5 s), in the background; Flush waits for them. At most 10,000
// records wait: past that a record is lost. Each record not written with
// its call, each one lost and the recovery are logged, and Stats counts
// them. A process killed during an outage loses the records waiting.
//
// A Log must not be copied after its first use; it is safe for concurrent
// use.
type Log struct {
	// Store keeps the records, under audit/DAY/NANOS-RANDOM.json (see
	// Records). Required.
	Store store.Store
	// Logger gets a line per record not written with its call (the error,
	// the count so far and how many wait), per record lost, and when the
	// records kept in memory are written; nil discards them.
	Logger *slog.Logger

	delayed atomic.Int64 // records not written with their call
	lost    atomic.Int64 // records never written

	mu       sync.Mutex
	queue    []queued      // waiting for the store, oldest first
	draining bool          // a drain is scheduled or running
	backoff  time.Duration // before the next drain, after one failed
	lastErr  error         // why the store did not take the last record
	written  int           // records of the queue written since it was last empty
	emptied  chan struct{} // closed when the queue is next empty; nil when it is
	max      int           // maxQueued, but in tests
}

// queued is a record waiting for the store: its key and value, and what
// its log lines name.
type queued struct {
	key          string
	value        []byte
	tool, output string
}

// Stats are what a Log did with its records since its first use, for a
// program's metrics.
type Stats struct {
	// Queued is how many records wait in memory now for the store.
	Queued int
	// Delayed counts the records kept in memory, not written before their
	// call's result returned (the store failed, took longer than 500 ms,
	// or had records waiting already); each is written once the store
	// takes records again.
	Delayed int64
	// Lost counts the records never written: 10,000 were waiting, or
	// the record could not be made.
	Lost int64
}

// Stats returns the Log's counts.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	n := len(l.queue)
	l.mu.Unlock()
	return Stats{Queued: n, Delayed: l.delayed.Load(), Lost: l.lost.Load()}
}

// key is the key of a record made at t.
func key(t time.Time) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	t = t.UTC()
	return fmt.Sprintf("%s%s/%019d-%s.json", keyPrefix, t.Format(time.DateOnly), t.UnixNano(), hex.EncodeToString(r[:])), nil
}

// encode is rec's key and value.
func encode(rec Record) (string, []byte, error) {
	k, err := key(rec.Time)
	if err != nil {
		return "", nil, err
	}
	b, err := json.Marshal(rec)
	return k, b, err
}

// write stores rec before it returns (a replica killed after the call's
// result left has its record kept).
func (l *Log) write(ctx context.Context, rec Record) error {
	k, b, err := encode(rec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	return l.Store.Put(ctx, k, b)
}

// keep adds a record to the queue, or counts it lost when maxQueued wait;
// lg names the call. It logs either way and starts the drain.
func (l *Log) keep(q queued, cause error, lg *slog.Logger) {
	l.mu.Lock()
	max := l.max
	if max == 0 {
		max = maxQueued
	}
	if len(l.queue) >= max {
		l.mu.Unlock()
		n := l.lost.Add(1)
		lg.Error("audit record lost: too many records wait for the store", "tool", q.tool, "outcome", q.output, "queued", max, "audit_lost", n)
		return
	}
	first := len(l.queue) == 0
	if cause != nil {
		l.lastErr = cause
	}
	cause = l.lastErr
	l.queue = append(l.queue, q)
	waiting := len(l.queue)
	if first {
		l.emptied = make(chan struct{})
	}
	if !l.draining {
		l.draining = true
		l.backoff = minBackoff
		time.AfterFunc(l.backoff, l.drain)
	}
	l.mu.Unlock()
	n := l.delayed.Add(1)
	if first {
		lg.Warn("audit records kept in memory until the store takes them", "error", cause)
	}
	lg.Error("audit record not written", "tool", q.tool, "outcome", q.output, "error", cause, "audit_failures", n, "queued", waiting)
}

// drain writes the records kept in memory, oldest first, until the queue
// is empty (logging the recovery) or a write fails (tried again after a
// backoff). One runs at a time (draining).
func (l *Log) drain() {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			n, emptied := l.written, l.emptied
			l.queue, l.written, l.draining, l.lastErr, l.emptied = nil, 0, false, nil, nil
			l.mu.Unlock()
			if l.Logger != nil {
				l.Logger.Info("audit records written after the store took them again", "written", n)
			}
			close(emptied) // after the line: a Flush that returns finds it logged
			return
		}
		q := l.queue[0]
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		err := l.Store.Put(ctx, q.key, q.value)
		cancel()
		l.mu.Lock()
		if err != nil {
			l.lastErr = err
			l.backoff = min(2*l.backoff, maxBackoff)
			time.AfterFunc(l.backoff, l.drain)
			l.mu.Unlock()
			return
		}
		l.queue[0] = queued{}
		l.queue = l.queue[1:]
		l.written++
		l.mu.Unlock()
	}
}

// Flush waits until the records kept in memory are written, or ctx ends:
// a program that stops calls it, so that a store back by then gets them.
// It returns nil at once when none wait, else, when ctx ends first, an
// error wrapping ctx's that says how many still wait.
func (l *Log) Flush(ctx context.Context) error {
	l.mu.Lock()
	emptied := l.emptied
	l.mu.Unlock()
	if emptied == nil {
		return nil
	}
	select {
	case <-emptied:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("audit: %d records not written: %w", l.Stats().Queued, ctx.Err())
	}
}

// Middleware is a receiving middleware of the go-sdk (an mcp.Middleware:
// mcp.Server.AddReceivingMiddleware), the one go-sdk type in this
// package's API, as it can only be: on a tools/call request it notes the
// caller (the Identity ctx carries, authn.IdentityFrom: put this
// middleware inside the one that sets it) and the session, for the
// records the request's handlers Report. Other requests pass as they are.
func (l *Log) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" || l == nil || l.Store == nil {
			return next(ctx, method, req)
		}
		c := &call{log: l}
		if id, ok := authn.IdentityFrom(ctx); ok {
			c.user, c.teams = id.User, id.Teams
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil && ss.ID() != "" {
			c.session = sessionTag(ss.ID())
		}
		return next(context.WithValue(ctx, callKey{}, c), method, req)
	}
}

// call is one tools/call request as Middleware received it.
type call struct {
	log           *Log
	user, session string
	teams         []string
}

type callKey struct{}

// Report writes rec, the record of a call that ctx's tools/call request
// made, to the Log whose Middleware received the request, before it
// returns: its User, Teams and Session are the request's, the rest is
// rec's. A record the store does not take within 500 ms, or while
// records wait for it, is kept in memory and written later (see Log);
// it fails nothing, and is logged (Log.Logger). Without such a Log in
// ctx (no audit log, or not a tools/call), Report does nothing. A call
// that the request left running reports with the request's ctx (or one
// derived from it, context.WithoutCancel included) when it ends.
func Report(ctx context.Context, rec Record) {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil {
		return
	}
	rec.User, rec.Teams, rec.Session = c.user, c.teams, c.session
	l := c.log
	lg := l.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	if c.user != "" {
		lg = lg.With("user", c.user)
	}
	if c.session != "" {
		lg = lg.With("session", c.session)
	}
	k, b, err := encode(rec)
	if err != nil {
		n := l.lost.Add(1)
		lg.Error("audit record lost", "tool", rec.Tool, "outcome", rec.Outcome, "error", err, "audit_lost", n)
		return
	}
	q := queued{key: k, value: b, tool: rec.Tool, output: rec.Outcome}
	l.mu.Lock()
	waiting := len(l.queue) > 0
	l.mu.Unlock()
	if waiting {
		// The store is known not to take records now: this call does not
		// wait for it either.
		l.keep(q, nil, lg)
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncWait)
	err = l.Store.Put(wctx, k, b)
	cancel()
	if err != nil {
		l.keep(q, err, lg)
	}
}

// sessionTag is how log lines name a session (gateway's rule, which a
// record's Session must match): 8 hex digits of its id's SHA-256, enough
// to tell a handful of sessions apart, useless to impersonate one.
func sessionTag(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:4])
}

// Records returns the records of the audit log kept in s (as a Log over
// s writes them) made at since or later, oldest first; the zero since
// gives them all. A record that cannot be read or decoded is an error
// naming its key, and the walk goes on if the loop does.
func Records(ctx context.Context, s store.Store, since time.Time) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		keys, err := recordKeys(ctx, s, since)
		if err != nil {
			yield(Record{}, err)
			return
		}
		for _, k := range keys {
			b, err := s.Get(ctx, k)
			if errors.Is(err, store.ErrNotFound) {
				continue // removed meanwhile
			}
			var rec Record
			if err == nil {
				if err = json.Unmarshal(b, &rec); err != nil {
					err = fmt.Errorf("audit: record %s: %w", k, err)
				}
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}

// recordKeys lists the keys of the records at since or later, in order:
// the days since then one by one when they are a few, else the whole log.
func recordKeys(ctx context.Context, s store.Store, since time.Time) ([]string, error) {
	var keys []string
	today := time.Now().UTC()
	if since.IsZero() || today.Sub(since) > 62*24*time.Hour {
		var err error
		if keys, err = s.List(ctx, keyPrefix); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
	} else {
		// Up to a day past today: another replica's clock may run ahead.
		for d := since.UTC().Truncate(24 * time.Hour); !d.After(today.Add(24 * time.Hour)); d = d.Add(24 * time.Hour) {
			day, err := s.List(ctx, keyPrefix+d.Format(time.DateOnly)+"/")
			if err != nil {
				return nil, fmt.Errorf("audit: %w", err)
			}
			keys = append(keys, day...)
		}
	}
	if since.IsZero() {
		return keys, nil
	}
	from := since.UnixNano()
	out := keys[:0]
	for _, k := range keys {
		if n, ok := keyNanos(k); ok && n >= from {
			out = append(out, k)
		}
	}
	return out, nil
}

// keyNanos returns the Unix nanoseconds of an audit record's key.
func keyNanos(key string) (int64, bool) {
	base := key[strings.LastIndexByte(key, '/')+1:]
	digits, _, ok := strings.Cut(base, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

// MinRetention is the least age of the cut Prune takes: the
// records of the last day are still being written (by every replica, one
// of whose clocks may run behind or ahead), so a day is pruned only once
// it is over everywhere.
const MinRetention = 24 * time.Hour

// pruneLock is the store lock Prune holds, so that replicas
// that prune at once do not race.
const pruneLock = "locks/audit-prune"

// Day is one day (UTC) of the audit log that Prune deleted.
type Day struct {
	// Day is the date as the records' keys have it (2026-11-26).
	Day string
	// Records is how many records of the day were deleted.
	Records int
}

// Prune deletes from the audit log kept in s (as a Log over s writes it)
// every whole day (UTC) that ended at before or earlier, and
// returns those days with their counts, oldest first. The day before
// falls in is kept whole, even its records made earlier than before: a
// day's records go together. A cut less than MinRetention ago is an
// error (that day's records are still being written), and nothing is
// deleted. It holds the store's lock "locks/audit-prune" while it lists
// and deletes, so that replicas pruning at once take turns; records
// written meanwhile are of days it does not delete. It lists the log's
// keys once, then deletes each day with store.DeletePrefix of
// "audit/DAY/" (one call when s is a store.PrefixDeleter, else a List and
// a Delete of each record); its count is the day's. An error (a key that cannot be deleted, ctx ending) stops
// it; the days deleted so far are returned with it, the last one with the
// records deleted of it.
func Prune(ctx context.Context, s store.Store, before time.Time) ([]Day, error) {
	if ago := time.Since(before); ago < MinRetention {
		return nil, fmt.Errorf("audit: prune before %s: %s; want a cut at least %v ago (that day's records are still being written)",
			before.UTC().Format(time.RFC3339), agoText(ago), MinRetention)
	}
	unlock, err := s.Lock(ctx, pruneLock)
	if err != nil {
		return nil, fmt.Errorf("audit: prune: %w", err)
	}
	defer unlock()
	keys, err := s.List(ctx, keyPrefix)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	cut := before.UTC()
	var days []Day
	last := ""               // the day deleted last
	for _, k := range keys { // sorted: by day, then by time
		dayText, _, ok := strings.Cut(strings.TrimPrefix(k, keyPrefix), "/")
		if !ok || dayText == last {
			continue // not a record's key, or deleted with its day
		}
		day, err := time.Parse(time.DateOnly, dayText)
		if err != nil || day.Add(24*time.Hour).After(cut) {
			continue // not a day, or a day not over at the cut
		}
		last = dayText
		n, err := store.DeletePrefix(ctx, s, keyPrefix+dayText+"/")
		if n > 0 { // 0: another deleted the day meanwhile, not a prune (they take turns)
			days = append(days, Day{Day: dayText, Records: n})
		}
		if err != nil {
			return days, fmt.Errorf("audit: prune: %w", err)
		}
	}
	return days, nil
}

// agoText says how long ago a time is, or that it is in the future.
func agoText(ago time.Duration) string {
	if ago < 0 {
		return fmt.Sprintf("%v in the future", (-ago).Round(time.Second))
	}
	return fmt.Sprintf("only %v ago", ago.Round(time.Second))
}
