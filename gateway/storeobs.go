package gateway

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/toolsift/toolsift/store"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of the store operations' spans.
const (
	attrStoreOp   = attribute.Key("toolsift.store.op")
	attrStoreKind = attribute.Key("toolsift.store.kind")
)

// InstrumentStore returns s counted by m (toolsift_store_operations_total
// and toolsift_store_operation_duration_seconds) and traced by tp (a span
// per operation, store.get and the like, within a request's trace: an
// operation whose ctx holds no span starts none), with every optional
// capability of s (store.Watcher, store.RateLimiter, store.BoundedGetter,
// store.PrefixDeleter); it returns s itself when m and tp are both nil.
// Open does it to Options.Toolset.Store when Options.Telemetry.Metrics or
// Options.Telemetry.Tracer is set: a caller gives the instrumented store to what
// else uses the same store (audit.Log, authn.Tokens, peruser.Logins),
// and to Toolset.Store, which Open then leaves as it is. Labels and
// attributes hold the operation, its outcome and a key's first segment
// (the kind of record), never a whole key.
func InstrumentStore(s store.Store, m *Metrics, tp trace.TracerProvider) store.Store {
	if s == nil || (m == nil && tp == nil) {
		return s
	}
	if _, ok := s.(interface{ obs() *obsStore }); ok {
		return s
	}
	o := &obsStore{s: s, m: m}
	if tp != nil {
		o.tr = tp.Tracer(tracerName)
	}
	// The capabilities the wrapper may only have when s has them: one
	// forwarding type each, and a case for each combination. (Those it
	// can always have, with the store package's fallback when s lacks
	// them, are methods of obsStore: GetBounded, DeletePrefix.)
	w, isWatcher := s.(store.Watcher)
	rl, isLimiter := s.(store.RateLimiter)
	switch {
	case isWatcher && isLimiter:
		return struct {
			*obsStore
			obsWatcher
			obsLimiter
		}{o, obsWatcher{o, w}, obsLimiter{o, rl}}
	case isWatcher:
		return struct {
			*obsStore
			obsWatcher
		}{o, obsWatcher{o, w}}
	case isLimiter:
		return struct {
			*obsStore
			obsLimiter
		}{o, obsLimiter{o, rl}}
	}
	return o
}

// obsStore is a store.Store counted and traced (InstrumentStore).
type obsStore struct {
	s  store.Store
	m  *Metrics     // nil: not counted
	tr trace.Tracer // nil: no spans
}

func (o *obsStore) obs() *obsStore { return o }

// Unwrap returns the store o instruments: code that looks for a concrete
// store (a folder's temporary files, a memory store's needs) finds it.
func (o *obsStore) Unwrap() store.Store { return o.s }

// start begins operation op on key (its first segment alone is kept):
// the span, when o traces and ctx is within a trace, and the clock.
func (o *obsStore) start(ctx context.Context, op, key string) (context.Context, trace.Span, time.Time) {
	var span trace.Span
	if o.tr != nil && trace.SpanContextFromContext(ctx).IsValid() {
		kind, _, _ := strings.Cut(key, "/")
		ctx, span = o.tr.Start(ctx, "store."+op, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrStoreOp.String(op), attrStoreKind.String(kind)))
	}
	return ctx, span, time.Now()
}

// end counts operation op, begun at start, and ends its span (none when
// nil) with its outcome: ok, not_found (a Get of a missing key) or error.
func (o *obsStore) end(op string, span trace.Span, start time.Time, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		outcome = "not_found"
	default:
		outcome = "error"
	}
	if o.m != nil {
		o.m.storeOps.WithLabelValues(op, outcome).Inc()
		if op != "watch" { // a watch lasts as long as its caller wants
			o.m.storeTime.WithLabelValues(op).Observe(time.Since(start).Seconds())
		}
	}
	if span != nil {
		span.SetAttributes(attrOutcome.String(outcome))
		if outcome == "error" {
			span.SetStatus(codes.Error, "store "+op+" failed")
		}
		span.End()
	}
}

func (o *obsStore) Get(ctx context.Context, key string) ([]byte, error) {
	ctx, span, t := o.start(ctx, "get", key)
	v, err := o.s.Get(ctx, key)
	o.end("get", span, t, err)
	return v, err
}

// GetBounded implements store.BoundedGetter, with the wrapped store's
// own when it has one (store.GetBounded); it counts as a get.
func (o *obsStore) GetBounded(ctx context.Context, key string, max int) ([]byte, error) {
	ctx, span, t := o.start(ctx, "get", key)
	v, err := store.GetBounded(ctx, o.s, key, max)
	o.end("get", span, t, err)
	return v, err
}

func (o *obsStore) Put(ctx context.Context, key string, value []byte) error {
	ctx, span, t := o.start(ctx, "put", key)
	err := o.s.Put(ctx, key, value)
	o.end("put", span, t, err)
	return err
}

func (o *obsStore) Delete(ctx context.Context, key string) error {
	ctx, span, t := o.start(ctx, "delete", key)
	err := o.s.Delete(ctx, key)
	o.end("delete", span, t, err)
	return err
}

// DeletePrefix implements store.PrefixDeleter, with the wrapped store's
// own when it has one (store.DeletePrefix).
func (o *obsStore) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	ctx, span, t := o.start(ctx, "delete_prefix", prefix)
	n, err := store.DeletePrefix(ctx, o.s, prefix)
	o.end("delete_prefix", span, t, err)
	return n, err
}

func (o *obsStore) List(ctx context.Context, prefix string) ([]string, error) {
	ctx, span, t := o.start(ctx, "list", prefix)
	keys, err := o.s.List(ctx, prefix)
	o.end("list", span, t, err)
	return keys, err
}

// Lock counts the wait for the lock; its hold is not an operation.
func (o *obsStore) Lock(ctx context.Context, key string) (func(), error) {
	ctx, span, t := o.start(ctx, "lock", key)
	unlock, err := o.s.Lock(ctx, key)
	o.end("lock", span, t, err)
	return unlock, err
}

func (o *obsStore) Close() error { return o.s.Close() }

// obsWatcher forwards store.Watcher, counting each Watch when it ends
// (its end is ok when its ctx ended); no span, a watch being no step of a
// request.
type obsWatcher struct {
	o *obsStore
	w store.Watcher
}

func (w obsWatcher) Watch(ctx context.Context, prefix string, ready func(), f func(key string)) error {
	err := w.w.Watch(ctx, prefix, ready, f)
	end := err
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		end = nil
	}
	w.o.end("watch", nil, time.Time{}, end)
	return err
}

// obsLimiter forwards store.RateLimiter, counted and traced as the
// operation take_token.
type obsLimiter struct {
	o  *obsStore
	rl store.RateLimiter
}

func (l obsLimiter) TakeToken(ctx context.Context, key string, n int, interval time.Duration, burst int) (time.Duration, error) {
	ctx, span, t := l.o.start(ctx, "take_token", key)
	retry, err := l.rl.TakeToken(ctx, key, n, interval, burst)
	l.o.end("take_token", span, t, err)
	return retry, err
}

var (
	_ store.BoundedGetter = (*obsStore)(nil)
	_ store.PrefixDeleter = (*obsStore)(nil)
)
