package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/store"
)

// AuditRecord is what the audit log (Options.Audit) keeps of one
// tools/call: who called which tool of which server, when, for how long,
// and the outcome. Never the arguments, the result or a credential.
type AuditRecord struct {
	// Time is when the call began.
	Time time.Time `json:"time"`
	// User and Teams are the caller's Identity; empty for an anonymous
	// caller (stdio, or HTTP with a shared token or none).
	User  string   `json:"user,omitempty"`
	Teams []string `json:"teams,omitempty"`
	// Tool is the tool's name as the client called it (server__tool);
	// Server and UpstreamTool name it upstream, empty when no tool of the
	// catalog has that name.
	Tool         string `json:"tool"`
	Server       string `json:"server,omitempty"`
	UpstreamTool string `json:"upstream_tool,omitempty"`
	// Duration is how long the call took.
	Duration time.Duration `json:"duration_ns"`
	// Outcome is the word of the call's log line: ok, tool-error (the
	// tool answered with isError), error, unknown, unavailable,
	// invalid-arguments, cancelled, or quarantined (refused: the tool
	// changed since it was trusted).
	Outcome string `json:"outcome"`
	// Session is the tag of the HTTP session (as log lines give it, never
	// its id); empty without one.
	Session string `json:"session,omitempty"`
}

// auditPrefix is the first segment of the audit records' keys:
// audit/YYYY-MM-DD/NANOS-RANDOM.json, the day and the Unix nanoseconds
// (19 digits) of the record's Time in UTC, so that keys sort by time, and
// 8 random bytes in hex, so that two replicas never write the same key.
const auditPrefix = "audit/"

// auditWriteTimeout bounds the write of one record: a call whose client
// left (its ctx over) still gets its record, and a store that hangs holds
// a call's result back at most this long.
const auditWriteTimeout = 10 * time.Second

// auditLog writes the records of the calls (proxy.call) to a store.
type auditLog struct {
	s      store.Store
	failed atomic.Int64 // records not written
}

// auditKey is the key of a record made at t.
func auditKey(t time.Time) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	t = t.UTC()
	return fmt.Sprintf("%s%s/%019d-%s.json", auditPrefix, t.Format(time.DateOnly), t.UnixNano(), hex.EncodeToString(r[:])), nil
}

// write stores rec before it returns (a replica killed after the call's
// result left has its record kept).
func (a *auditLog) write(ctx context.Context, rec AuditRecord) error {
	key, err := auditKey(rec.Time)
	if err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	return a.s.Put(ctx, key, b)
}

// audit keeps the record of one call, when the proxy has an audit log. A
// record that cannot be written fails no call: it is logged, with the
// count of records lost so far.
func (p *proxy) audit(ctx context.Context, ss *mcp.ServerSession, rec AuditRecord) {
	if p.auditLog == nil {
		return
	}
	if id, ok := authn.IdentityFrom(ctx); ok {
		rec.User, rec.Teams = id.User, id.Teams
	}
	if ss != nil && ss.ID() != "" {
		rec.Session = sessionTag(ss.ID())
	}
	if err := p.auditLog.write(ctx, rec); err != nil {
		n := p.auditLog.failed.Add(1)
		p.logger(ctx, ss).Error("audit record not written", "tool", rec.Tool, "outcome", rec.Outcome, "error", err, "audit_failures", n)
	}
}

// AuditRecords returns the records of the audit log kept in s (as
// Options.Audit writes them) made at since or later, oldest first; the
// zero since gives them all. A record that cannot be read or decoded is
// an error naming its key, and the walk goes on if the loop does.
func AuditRecords(ctx context.Context, s store.Store, since time.Time) iter.Seq2[AuditRecord, error] {
	return func(yield func(AuditRecord, error) bool) {
		keys, err := auditKeys(ctx, s, since)
		if err != nil {
			yield(AuditRecord{}, err)
			return
		}
		for _, k := range keys {
			b, err := s.Get(ctx, k)
			if errors.Is(err, store.ErrNotFound) {
				continue // removed meanwhile
			}
			var rec AuditRecord
			if err == nil {
				if err = json.Unmarshal(b, &rec); err != nil {
					err = fmt.Errorf("gateway: audit record %s: %w", k, err)
				}
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}

// auditKeys lists the keys of the records at since or later, in order:
// the days since then one by one when they are a few, else the whole log.
func auditKeys(ctx context.Context, s store.Store, since time.Time) ([]string, error) {
	var keys []string
	today := time.Now().UTC()
	if since.IsZero() || today.Sub(since) > 62*24*time.Hour {
		var err error
		if keys, err = s.List(ctx, auditPrefix); err != nil {
			return nil, fmt.Errorf("gateway: audit log: %w", err)
		}
	} else {
		// Up to a day past today: another replica's clock may run ahead.
		for d := since.UTC().Truncate(24 * time.Hour); !d.After(today.Add(24 * time.Hour)); d = d.Add(24 * time.Hour) {
			day, err := s.List(ctx, auditPrefix+d.Format(time.DateOnly)+"/")
			if err != nil {
				return nil, fmt.Errorf("gateway: audit log: %w", err)
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
		if n, ok := auditKeyNanos(k); ok && n >= from {
			out = append(out, k)
		}
	}
	return out, nil
}

// auditKeyNanos returns the Unix nanoseconds of an audit record's key.
func auditKeyNanos(key string) (int64, bool) {
	base := key[strings.LastIndexByte(key, '/')+1:]
	digits, _, ok := strings.Cut(base, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

// MinAuditRetention is the least age of the cut PruneAudit takes: the
// records of the last day are still being written (by every replica, one
// of whose clocks may run behind or ahead), so a day is pruned only once
// it is over everywhere.
const MinAuditRetention = 24 * time.Hour

// auditPruneLock is the store lock PruneAudit holds, so that replicas
// that prune at once do not race.
const auditPruneLock = "locks/audit-prune"

// AuditDay is one day (UTC) of the audit log that PruneAudit deleted.
type AuditDay struct {
	// Day is the date as the records' keys have it (2026-11-26).
	Day string
	// Records is how many records of the day were deleted.
	Records int
}

// PruneAudit deletes from the audit log kept in s (as Options.Audit
// writes it) every whole day (UTC) that ended at before or earlier, and
// returns those days with their counts, oldest first. The day before
// falls in is kept whole, even its records made earlier than before: a
// day's records go together. A cut less than MinAuditRetention ago is an
// error (that day's records are still being written), and nothing is
// deleted. It holds the store's lock "locks/audit-prune" while it lists
// and deletes, so that replicas pruning at once take turns; records
// written meanwhile are of days it does not delete. It lists the log's
// keys once, then deletes each day with store.DeletePrefix of
// "audit/DAY/" (one call when s is a store.PrefixDeleter, else a List and
// a Delete of each record); its count is the day's. An error (a key that cannot be deleted, ctx ending) stops
// it; the days deleted so far are returned with it, the last one with the
// records deleted of it.
func PruneAudit(ctx context.Context, s store.Store, before time.Time) ([]AuditDay, error) {
	if ago := time.Since(before); ago < MinAuditRetention {
		return nil, fmt.Errorf("gateway: audit log: prune before %s: %s; want a cut at least %v ago (that day's records are still being written)",
			before.UTC().Format(time.RFC3339), agoText(ago), MinAuditRetention)
	}
	unlock, err := s.Lock(ctx, auditPruneLock)
	if err != nil {
		return nil, fmt.Errorf("gateway: audit log: prune: %w", err)
	}
	defer unlock()
	keys, err := s.List(ctx, auditPrefix)
	if err != nil {
		return nil, fmt.Errorf("gateway: audit log: %w", err)
	}
	cut := before.UTC()
	var days []AuditDay
	last := ""               // the day deleted last
	for _, k := range keys { // sorted: by day, then by time
		dayText, _, ok := strings.Cut(strings.TrimPrefix(k, auditPrefix), "/")
		if !ok || dayText == last {
			continue // not a record's key, or deleted with its day
		}
		day, err := time.Parse(time.DateOnly, dayText)
		if err != nil || day.Add(24*time.Hour).After(cut) {
			continue // not a day, or a day not over at the cut
		}
		last = dayText
		n, err := store.DeletePrefix(ctx, s, auditPrefix+dayText+"/")
		if n > 0 { // 0: another deleted the day meanwhile, not a prune (they take turns)
			days = append(days, AuditDay{Day: dayText, Records: n})
		}
		if err != nil {
			return days, fmt.Errorf("gateway: audit log: prune: %w", err)
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
