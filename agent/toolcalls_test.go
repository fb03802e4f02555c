package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/tool"
)

// TestMaxToolCalls: a reply with 1,000 tool calls runs the first
// MaxToolCalls (64) of them; the rest are not run nor sent back, and the
// model is told how many were refused and why (issue 35 item 4: all of a
// reply's 10,000 were run, and the next request carried 1.8 MB).
func TestMaxToolCalls(t *testing.T) {
	var many []tool.ToolCall
	for i := range 1000 {
		many = append(many, tool.ToolCall{Name: "t__get_weather", Arguments: fmt.Sprintf(`{"city":"C%d"}`, i)})
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			f := newFixture(t, catalog(), 3)
			srv := agenttest.NewServer(agenttest.Reply{ToolCalls: many, ChunkSize: 100}, agenttest.Reply{Content: "done"})
			defer srv.Close()
			res, err := newAgent(t, srv, f, stream, nil).Run(context.Background(), "Weather everywhere?")
			if err != nil {
				t.Fatal(err)
			}
			if got := len(f.Calls()); got != agent.DefaultMaxToolCalls {
				t.Fatalf("%d calls run, want %d", got, agent.DefaultMaxToolCalls)
			}
			st := res.Steps[0]
			if len(st.Calls) != 64 || len(st.Message.ToolCalls) != 64 || st.DroppedCalls != 1000-64 {
				t.Fatalf("step: %d calls, %d in its message, %d dropped", len(st.Calls), len(st.Message.ToolCalls), st.DroppedCalls)
			}
			req := srv.Requests()[1]
			tms := toolMessages(req)
			if len(tms) != 64 {
				t.Fatalf("the next request answers %d calls, want 64", len(tms))
			}
			for _, m := range req.Messages {
				if len(m.ToolCalls) > 64 {
					t.Fatalf("the next request sends back %d calls", len(m.ToolCalls))
				}
			}
			want := "refused 936 more tool calls of your reply, not run: it asked for 1000, more than the 64 one reply may make (agent.Options.MaxToolCalls)"
			if !strings.Contains(tms[63].Content, want) {
				t.Fatalf("last tool message %q lacks %q", tms[63].Content, want)
			}
		})
	}
}
