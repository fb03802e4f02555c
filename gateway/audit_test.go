package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestAuditConcurrentCalls: the calls of several users at once each leave
// one record, under keys that sort by time, with no arguments in any.
func TestAuditConcurrentCalls(t *testing.T) {
	ctx := context.Background()
	folder := t.TempDir()
	st := newDir(t, folder)
	tokens := authn.NewTokens(st)
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{Audit: st, Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	// Closed after the clients (cleanups run last first).
	srv := httptest.NewServer(behind(tokens, nil, gw.Handler()))
	t.Cleanup(srv.Close)

	const users, callsEach = 4, 8
	var wg sync.WaitGroup
	for u := range users {
		secret, _, err := tokens.Create(ctx, fmt.Sprintf("user%d", u), nil, "")
		if err != nil {
			t.Fatal(err)
		}
		c := httpClient(t, srv.URL, secret, "2025-11-25")
		for i := range callsEach {
			wg.Go(func() {
				a := 900000 + u*100 + i
				res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "math__add", "arguments": map[string]any{"a": a, "b": 0}}})
				if err != nil || res.IsError {
					t.Errorf("call %d of user%d: %v %+v", i, u, err, res)
				}
			})
		}
	}
	wg.Wait()

	keys, err := st.List(ctx, "audit/")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != users*callsEach {
		t.Fatalf("%d audit records, want %d", len(keys), users*callsEach)
	}
	perUser := map[string]int{}
	var last time.Time
	for rec, err := range gateway.AuditRecords(ctx, st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		perUser[rec.User]++
		if rec.Time.Before(last) {
			t.Errorf("records out of time order: %v after %v", rec.Time, last)
		}
		last = rec.Time
		if rec.Outcome != "ok" || rec.Server != "math" || rec.Session == "" {
			t.Errorf("record %+v", rec)
		}
	}
	for u := range users {
		if n := perUser[fmt.Sprintf("user%d", u)]; n != callsEach {
			t.Errorf("user%d has %d records, want %d", u, n, callsEach)
		}
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "audit/"+time.Now().UTC().Format(time.DateOnly)+"/") && !strings.HasPrefix(k, "audit/"+last.UTC().Format(time.DateOnly)+"/") {
			t.Errorf("key %s is not under its day", k)
		}
	}
	// The arguments (900000 and up) are in no record.
	grepRecords(t, filepath.Join(folder, "audit"), "9000", "arguments")

	// since: the records of the last calls only.
	mid, err := time.Parse(time.RFC3339Nano, "2000-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range gateway.AuditRecords(ctx, st, mid) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != users*callsEach {
		t.Errorf("since 2000: %d records, want %d", n, users*callsEach)
	}
	n = 0
	for range gateway.AuditRecords(ctx, st, last.Add(time.Nanosecond)) {
		n++
	}
	if n != 0 {
		t.Errorf("since after the last record: %d records, want 0", n)
	}
}

// TestAuditRecordsSince: records are read from since on, across days,
// from keys that sort by time.
func TestAuditRecordsSince(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	now := time.Now().UTC()
	var times []time.Time
	for _, ago := range []time.Duration{72 * time.Hour, 25 * time.Hour, 2 * time.Hour, time.Minute} {
		tm := now.Add(-ago)
		times = append(times, tm)
		if err := gateway.WriteAudit(ctx, st, gateway.AuditRecord{Time: tm, User: "alice", Tool: "math__add", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		since time.Time
		want  []time.Time
	}{
		{time.Time{}, times},
		{now.Add(-48 * time.Hour), times[1:]},
		{now.Add(-time.Hour), times[3:]},
		{now.Add(-400 * 24 * time.Hour), times},
		{now, nil},
	} {
		var got []time.Time
		for rec, err := range gateway.AuditRecords(ctx, st, c.since) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rec.Time)
		}
		if !slices.EqualFunc(got, c.want, time.Time.Equal) {
			t.Errorf("since %v: %v, want %v", c.since, got, c.want)
		}
	}
}

// failingPuts is a store whose writes fail.
type failingPuts struct{ store.Store }

func (failingPuts) Put(context.Context, string, []byte) error {
	return errors.New("disk full")
}

// TestAuditWriteFails: a record that cannot be written fails no call: the
// call's result is returned, and the log says a record was lost and how
// many so far.
func TestAuditWriteFails(t *testing.T) {
	var buf testenv.Buffer
	ts := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, &gateway.ProxyOptions{Audit: failingPuts{store.NewMemory()}, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, p.NewServer(), "")
	for range 2 {
		if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}); isErr || text != "3" {
			t.Errorf("call_tool = %q (isError %v), want 3", text, isErr)
		}
	}
	for _, want := range []string{`msg="audit record not written" tool=math__add outcome=ok error="disk full" audit_failures=1`, "audit_failures=2"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, buf.String())
		}
	}
}

// BenchmarkAuditWrite: what a call's record costs before its result
// returns: a synced file (Dir) or a map (Memory).
func BenchmarkAuditWrite(b *testing.B) {
	ctx := context.Background()
	rec := gateway.AuditRecord{User: "alice", Teams: []string{"eng"}, Tool: "math__add", Server: "math", UpstreamTool: "add",
		Duration: time.Millisecond, Outcome: "ok", Session: "0a1b2c3d"}
	for _, kind := range []string{"dir", "memory"} {
		b.Run(kind, func(b *testing.B) {
			var st store.Store = store.NewMemory()
			if kind == "dir" {
				st = newDir(b, b.TempDir())
			}
			b.ReportAllocs()
			for b.Loop() {
				rec.Time = time.Now()
				if err := gateway.WriteAudit(ctx, st, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCallIdentified: one call_tool over HTTP (a go-sdk client, a
// session) with a shared token, with a per-user API token, and with the
// token and an audit record in memory or in a folder: what identities and
// the audit log add to a call.
func BenchmarkCallIdentified(b *testing.B) {
	ctx := context.Background()
	cfg := localTools(b)
	ts, err := toolsift.OpenConfig(ctx, cfg, &toolsift.Options{NoSemantic: true, Store: store.NewMemory()})
	if err != nil {
		b.Fatal(err)
	}
	defer ts.Close()
	for _, c := range []string{"shared-token", "api-token", "api-token+audit-memory", "api-token+audit-dir"} {
		b.Run(c, func(b *testing.B) {
			st := store.Store(store.NewMemory())
			if strings.HasSuffix(c, "dir") {
				st = newDir(b, b.TempDir())
			}
			po := &gateway.ProxyOptions{}
			if strings.Contains(c, "audit") {
				po.Audit = st
			}
			p, err := gateway.NewProxy(ts, po)
			if err != nil {
				b.Fatal(err)
			}
			v, secret := authn.SharedToken("shared"), "shared"
			if c != "shared-token" {
				tokens := authn.NewTokens(st)
				if secret, _, err = tokens.Create(ctx, "alice", nil, ""); err != nil {
					b.Fatal(err)
				}
				v = tokens
			}
			srv := httptest.NewServer(authn.Require(v, nil)(p.Handler(nil)))
			defer srv.Close()
			hc := &http.Client{Transport: bearer{secret, http.DefaultTransport}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
				&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// grepRecords fails the test if an audit record under dir holds one of
// texts outside its time and duration, whose digits may hold a number by
// chance.
func grepRecords(t *testing.T, dir string, texts ...string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var rec map[string]any
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		delete(rec, "time")
		delete(rec, "duration_ns")
		b, _ = json.Marshal(rec)
		for _, s := range texts {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds %q (the call's arguments): %s", p, s, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
