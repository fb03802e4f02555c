package openaimodel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/openaimodel"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/tool"
)

// TestStreamDefault: by default (Stream false) a model sends plain requests,
// which a server that does not stream answers as well as one that does;
// asked to stream, a server that does not stream (it ignores "stream" and
// answers with one JSON body) fails the request with an error wrapping
// agent.ErrNoStream that names the option to turn off, where it used to
// say only "stream ended without a choice". A server that streams still
// streams.
func TestStreamDefault(t *testing.T) {
	msgs := []tool.Message{{Role: tool.RoleUser, Content: "hi"}}
	at := func(url string) provider.Options { return provider.Options{BaseURL: url, APIKey: "k", MaxRetries: -1} }
	type model struct {
		name   string
		option string
		new    func(url string, stream bool) agent.Model
		server func(agenttest.Reply) (url string, streamed func() []bool, stop func())
	}
	for _, m := range []model{
		{"chat", "openaimodel.ChatOptions.Stream",
			func(url string, stream bool) agent.Model {
				c, err := openaimodel.NewChat("m", &openaimodel.ChatOptions{Options: at(url), Stream: stream})
				if err != nil {
					t.Fatal(err)
				}
				return c
			},
			func(r agenttest.Reply) (string, func() []bool, func()) {
				srv := agenttest.NewServer(r)
				return srv.URL, func() []bool {
					var out []bool
					for _, q := range srv.Requests() {
						out = append(out, q.Stream)
					}
					return out
				}, srv.Close
			}},
		{"responses", "openaimodel.ResponsesOptions.Stream",
			func(url string, stream bool) agent.Model {
				c, err := openaimodel.NewResponses("m", &openaimodel.ResponsesOptions{Options: at(url), Stream: stream})
				if err != nil {
					t.Fatal(err)
				}
				return c
			},
			func(r agenttest.Reply) (string, func() []bool, func()) {
				srv := agenttest.NewResponsesServer(r)
				return srv.URL, func() []bool {
					var out []bool
					for _, q := range srv.Requests() {
						out = append(out, q.Stream)
					}
					return out
				}, srv.Close
			}},
	} {
		t.Run(m.name, func(t *testing.T) {
			for _, tt := range []struct {
				name             string
				serverStreams    bool
				stream           bool
				wantErr          bool
				wantStreamedReqs bool
			}{
				{"default, server does not stream", false, false, false, false},
				{"default, server streams", true, false, false, false},
				{"stream, server streams", true, true, false, true},
				{"stream, server does not stream", false, true, true, true},
			} {
				url, streamed, stop := m.server(agenttest.Reply{Content: "hello", NoStream: !tt.serverStreams})
				var deltas strings.Builder
				resp, err := m.new(url, tt.stream).Complete(context.Background(), agent.Request{Messages: msgs, OnDelta: func(d agent.Delta) { deltas.WriteString(d.Text) }})
				stop()
				if got := streamed(); len(got) != 1 || got[0] != tt.wantStreamedReqs {
					t.Errorf("%s: requests asked to stream: %v, want [%v]", tt.name, got, tt.wantStreamedReqs)
				}
				if !tt.wantErr {
					if err != nil || resp.Message.Content != "hello" {
						t.Errorf("%s: %q, %v; want hello", tt.name, resp.Message.Content, err)
					}
					if want := map[bool]string{true: "hello"}[tt.stream]; deltas.String() != want {
						t.Errorf("%s: deltas %q, want %q", tt.name, deltas.String(), want)
					}
					continue
				}
				if !errors.Is(err, agent.ErrModel) || !errors.Is(err, agent.ErrNoStream) {
					t.Fatalf("%s: %v, want agent.ErrModel wrapping agent.ErrNoStream", tt.name, err)
				}
				t.Logf("%s: %v", tt.name, err)
				for _, want := range []string{"application/json", "set " + m.option + " to false"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: %q does not say %q", tt.name, err, want)
					}
				}
			}
		})
	}
}
