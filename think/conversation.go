package think

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
)

// ConversationQuery is the one rule that turns a conversation into the
// Query of its next Think step, for the agent's loop and toolsift's Select
// alike: the latest user message is the task; the latest assistant message
// after it (its text, then each tool call as "name arguments" on a line of
// its own) is the thought; the tool results that follow it, in order, are
// the observations. Used is left for the caller (the tools it knows were
// called). It also returns the arguments of that assistant message's
// search_tools calls, in order.
func ConversationQuery(msgs []tool.Message) (q retrieval.Query, searches []string) {
	i := len(msgs) - 1
	var obs []string
	for ; i >= 0 && msgs[i].Role == tool.RoleTool; i-- {
		obs = append(obs, msgs[i].Content)
	}
	slices.Reverse(obs)
	if i >= 0 && msgs[i].Role == tool.RoleAssistant {
		q.Observations = obs
		var b strings.Builder
		b.WriteString(msgs[i].Content)
		for _, c := range msgs[i].ToolCalls {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%s %s", c.Name, c.Arguments)
			if c.Name == SearchToolName {
				searches = append(searches, c.Arguments)
			}
		}
		q.Thought = b.String()
	}
	for ; i >= 0; i-- {
		if msgs[i].Role == tool.RoleUser {
			q.Task = msgs[i].Content
			break
		}
	}
	return q, searches
}
