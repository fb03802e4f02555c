package toolsift

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// Selection is the tools to send with the next model call, chosen by
// Select: what the agent would offer at this step.
type Selection struct {
	// Tools are in request order (by name, search_tools last when it is
	// offered): the same set always gives the same bytes, so prompt caches
	// keep hitting.
	Tools []SelectedTool `json:"tools"`
	// Tokens is what Tools cost, counted in the Chat Completions shape.
	Tokens int `json:"tokens"`
	// AllTokens is what sending the whole catalog (AllTools tools) would
	// cost instead.
	AllTokens int `json:"all_tokens"`
	AllTools  int `json:"all_tools"`
	// Incomplete, when not nil, names the servers whose tools the step
	// could not consider: still connecting (the next Select sees more) or
	// failed (see Toolset.Think).
	Incomplete *think.Incomplete `json:"incomplete,omitempty"`
	// Query is what the tools were ranked for (think.ConversationQuery of
	// the conversation): after a successful call of one of Tools, pass it
	// to Toolset.Record so that a request like it finds that tool again.
	Query retrieval.Query `json:"-"`
}

// SelectedTool is one tool of a Selection with why it is offered.
type SelectedTool struct {
	Name string `json:"name"`
	// Reason is why it is offered: think.ReasonRetrieved, ReasonPinned,
	// ReasonSticky (called earlier in the conversation), ReasonFound (found
	// by search_tools at the previous turn), ReasonAll (the whole catalog
	// fits) or ReasonMeta (search_tools itself).
	Reason string `json:"reason"`
	// Score is its retrieval score in [0, 1]; 0 when it was not retrieved.
	Score float64 `json:"score"`
	// Tier is how much of its definition fits the budget; Tokens its cost.
	Tier   budget.Tier `json:"tier"`
	Tokens int         `json:"tokens"`
	// Description and Parameters are what to send, at Tier.
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// JSON returns the selected tools as the "tools" array of a request in
// format f: budget.FormatChat (Chat Completions), FormatResponses (OpenAI
// Responses API), FormatAnthropic (Messages API) or FormatMCP (the tools of
// an MCP tools/list result). Answer the model's search_tools calls with
// Toolset.SearchTools, then call Select again: the tools it found join the
// next selection.
func (s Selection) JSON(f budget.Format) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range s.Tools {
		if i > 0 {
			b.WriteByte(',')
		}
		r := budget.Rendered{Tier: t.Tier, Tokens: t.Tokens, Description: t.Description, Parameters: t.Parameters}
		b.Write(r.JSON(t.Name, f))
	}
	b.WriteByte(']')
	return b.Bytes()
}

// Names returns the names of the selected tools, search_tools included.
func (s Selection) Names() []string {
	names := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		names[i] = t.Name
	}
	return names
}

// Select chooses the tools for an application's next model call from its
// conversation, as the agent's Think step does (think.ConversationQuery:
// the latest user message is the task, the latest assistant message, its
// text and tool calls, the thought, the tool results after it the
// observations); tools called in the conversation stay offered (sticky);
// when the latest assistant message called search_tools, the tools that
// search finds join this selection. The best tools fit the budget
// (Options.Budget), with search_tools when anything is left out. It is
// safe for concurrent use. Over a Hub of HubOptions.Background it first
// waits once for the servers still connecting (Options.ConnectWait), and
// Selection.Incomplete names those still connecting then and those that
// failed.
//
// The conversation is plain data, tool.Message (the agent's own type):
// applications that run their own loop (LangChainGo, Eino, Genkit, a
// hand-written one) convert their framework's messages to it; only roles,
// text and tool calls matter.
func (ts *Toolset) Select(ctx context.Context, conversation []tool.Message) (Selection, error) {
	q, searches := think.ConversationQuery(conversation)
	for _, name := range toolsCalled(conversation) {
		if _, ok := ts.Get(name); ok {
			q.Used = append(q.Used, name)
		}
	}
	// One wait for the servers still connecting, for the searches and
	// the step alike.
	in := ts.await(ctx)
	th := ts.th.Load()
	var found []string
	for _, args := range searches {
		_, matches, err := th.SearchTools(ctx, json.RawMessage(args))
		if err != nil {
			continue // the model was told about its bad arguments already
		}
		for _, m := range matches {
			if !slices.Contains(found, m.Tool.Name) {
				found = append(found, m.Tool.Name)
			}
		}
	}
	off, err := th.Think(ctx, think.Request{Query: q, Found: found})
	if err != nil {
		return Selection{}, fmt.Errorf("toolsift: select: %w", err)
	}
	sel := Selection{Tokens: off.Tokens, AllTokens: off.AllTokens, AllTools: off.AllTools, Incomplete: in, Query: q}
	for _, o := range off.Tools {
		sel.Tools = append(sel.Tools, SelectedTool{
			Name: o.Tool.Name, Reason: o.Reason, Score: o.Score, Tier: o.Tier, Tokens: o.Tokens,
			Description: o.Description, Parameters: o.Parameters,
		})
	}
	return sel, nil
}

// toolsCalled returns the names of the tools the conversation called, in
// first-call order, search_tools aside.
func toolsCalled(msgs []tool.Message) []string {
	var names []string
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.Name != think.SearchToolName && !slices.Contains(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	return names
}
