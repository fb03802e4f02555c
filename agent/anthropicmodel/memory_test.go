package anthropicmodel_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/anthropicmodel"
	"github.com/toolsift/toolsift/internal/anthropictest"
	"github.com/toolsift/toolsift/tool"
)

// countingTransport counts the bytes of the reply bodies it hands on.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// largeReplies are long replies streamed in many small deltas: a text, and
// a tool call's arguments.
func largeReplies(size int) []struct {
	name  string
	reply anthropictest.Reply
} {
	text := strings.Repeat("All work and no play makes Jack a dull boy. ", size/44+1)[:size]
	return []struct {
		name  string
		reply anthropictest.Reply
	}{
		{"text", anthropictest.Reply{Content: text, ChunkSize: 4}},
		{"tool input", anthropictest.Reply{ToolCalls: []tool.ToolCall{{Name: "write", Arguments: `{"text":"` + text + `"}`}}, ChunkSize: 4}},
	}
}

// heapMeter reads the heap's object bytes (live and not yet swept) and the
// bytes allocated so far.
type heapMeter struct{ s []metrics.Sample }

func newHeapMeter() *heapMeter {
	return &heapMeter{s: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}}
}

func (h *heapMeter) read() (heap, allocs uint64) {
	metrics.Read(h.s)
	return h.s[0].Value.Uint64(), h.s[1].Value.Uint64()
}

// streamMeter streams replies of one server and measures each: the bytes
// streamed (the reply's bytes on the wire), the bytes allocated meanwhile,
// and the heap's peak above where it started (the heap's object bytes,
// live or not yet swept, sampled every 256 deltas).
type streamMeter struct {
	m  *anthropicmodel.Model
	ct *countingTransport
	hm *heapMeter
}

func newStreamMeter(tb testing.TB, reply anthropictest.Reply) *streamMeter {
	srv := anthropictest.NewServerFunc(func(anthropictest.Request) anthropictest.Reply { return reply })
	tb.Cleanup(srv.Close)
	ct := &countingTransport{}
	return &streamMeter{
		m:  newModel(tb, srv.URL, anthropicmodel.Options{Stream: true, HTTPClient: &http.Client{Transport: ct}}),
		ct: ct,
		hm: newHeapMeter(),
	}
}

func (s *streamMeter) measure(tb testing.TB) (streamed, allocated, peak uint64) {
	runtime.GC()
	base, allocs0 := s.hm.read()
	before := s.ct.n.Load()
	deltas := 0
	_, err := s.m.Complete(context.Background(), agent.Request{
		Messages: []tool.Message{{Role: tool.RoleUser, Content: "go"}},
		Tools:    []agent.ToolDef{{Name: "write"}},
		OnDelta: func(agent.Delta) {
			if deltas++; deltas%256 == 0 {
				if h, _ := s.hm.read(); h > base {
					peak = max(peak, h-base)
				}
			}
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	_, allocs1 := s.hm.read()
	return uint64(s.ct.n.Load() - before), allocs1 - allocs0, peak
}

// TestStreamMemory: a long reply streamed in many small deltas (a text, a
// tool call's arguments) costs memory in proportion to what was streamed:
// the bytes allocated stay within 64 times the bytes streamed (decoding
// each event costs about 30; the SDK's accumulation of a text, which
// copied the whole text at every delta, allocated 330 times for this
// reply). The heap's peak depends on when the collector runs, so it is
// BenchmarkStreamMemory's to report, not a test's to assert.
func TestStreamMemory(t *testing.T) {
	for _, tc := range largeReplies(64 << 10) {
		t.Run(tc.name, func(t *testing.T) {
			streamed, allocated, peak := newStreamMeter(t, tc.reply).measure(t)
			t.Logf("streamed %d bytes; allocated %.1f bytes and the heap's peak rose %.2f bytes per byte streamed", streamed, float64(allocated)/float64(streamed), float64(peak)/float64(streamed))
			if allocated > 64*streamed {
				t.Errorf("streaming %d bytes allocated %d bytes (%.0f per byte streamed), want at most 64 per byte", streamed, allocated, float64(allocated)/float64(streamed))
			}
		})
	}
}

// BenchmarkStreamMemory streams a reply of 256 KiB in 4-byte deltas from
// anthropictest and reports, per MB streamed, the bytes allocated and the
// heap's peak above where it started.
func BenchmarkStreamMemory(b *testing.B) {
	for _, tc := range largeReplies(256 << 10) {
		b.Run(tc.name, func(b *testing.B) {
			s := newStreamMeter(b, tc.reply)
			var streamed, allocated, peak uint64
			b.ReportAllocs()
			for b.Loop() {
				n, a, p := s.measure(b)
				streamed, allocated, peak = streamed+n, allocated+a, max(peak, p)
			}
			mb := float64(streamed) / float64(b.N) / (1 << 20)
			b.ReportMetric(float64(streamed)/float64(b.N), "streamed-B/op")
			b.ReportMetric(float64(allocated)/float64(b.N)/mb, "alloc-B/MB")
			b.ReportMetric(float64(peak)/mb, "peak-heap-B/MB")
		})
	}
}
