package think

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
)

// SearchToolName is the name of the search_tools meta-tool.
const SearchToolName = "search_tools"

// ErrSearchArgs reports search_tools arguments that cannot be used (not a
// JSON object, no query, k out of range).
var ErrSearchArgs = errors.New("think: bad search_tools arguments")

// defaultSearchK is how many tools a search_tools answer holds when the
// model names no k (not DefaultK, what a step ranks); maxSearchK is the
// most it may ask for.
const (
	defaultSearchK = 5
	maxSearchK     = 20
)

// SearchTool returns the definition of the search_tools meta-tool, which a
// step offers (Think) whenever a tool is left out, so that the model can
// ask for tools the step did not offer. Answer its calls with
// Thinker.SearchTools (the loop's answer: names for the next step) or
// Thinker.Find (the found tools' schemas). Its input schema is the one of
// every search_tools, whichever answer it gets.
func SearchTool() tool.Tool {
	t := tool.Tool{
		Name:         SearchToolName,
		OriginalName: SearchToolName,
		Title:        "Search tools",
		Description: "Search the catalog of available tools by what you need to do. " +
			"Use it when none of the tools you have fits the next step. " +
			"Returns the names and one-line descriptions of the best matching tools; " +
			"they become callable in your next step.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"What the tool should do, in a few words (for example: create a calendar event)."},` +
			fmt.Sprintf(`"k":{"type":"integer","description":"How many tools to return (1-%d, default %d).","minimum":1,"maximum":%d}},`, maxSearchK, defaultSearchK, maxSearchK) +
			`"required":["query"],"additionalProperties":false}`),
	}
	return t.WithHash()
}

// SearchArgs are the arguments of a search_tools call.
type SearchArgs struct {
	Query string `json:"query"`
	K     int    `json:"k,omitempty"`
}

// ParseSearchArgs reads the JSON arguments of a search_tools call: the
// query trimmed and not empty, k in 1..20, 5 when the model names none.
// It is the one rule for them, whichever answer a call gets
// (Thinker.SearchTools, Thinker.Find). Bad arguments give an error wrapping ErrSearchArgs, whose
// text ("search_tools: ...") is meant to be shown to the model.
func ParseSearchArgs(args json.RawMessage) (SearchArgs, error) {
	var a SearchArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return a, searchArgsError("arguments: " + err.Error())
	}
	a.Query = strings.TrimSpace(a.Query)
	switch {
	case a.Query == "":
		return a, searchArgsError("query is empty: say what the tool should do")
	case a.K < 0 || a.K > maxSearchK:
		return a, searchArgsError(fmt.Sprintf("k = %d, want 1..%d", a.K, maxSearchK))
	case a.K == 0:
		a.K = defaultSearchK
	}
	return a, nil
}

// searchArgsError is a bad search_tools argument, said to the model as
// "search_tools: <what is wrong>"; it is an ErrSearchArgs.
type searchArgsError string

func (e searchArgsError) Error() string        { return SearchToolName + ": " + string(e) }
func (e searchArgsError) Is(target error) bool { return target == ErrSearchArgs }

// foundTool is one entry of a search_tools answer.
type foundTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SearchTools answers a search_tools call for a loop that offers the found
// tools at its next step: args is the JSON arguments the model sent. It returns the answer for the model
// (a compact JSON object {"tools":[{"name","description"}...]} with
// one-line descriptions) and the matches (retrieval.Retriever.Search, the
// best k; search_tools never finds itself), which the caller adds to the
// tools of the next step (Request.Found). K defaults to 5 and may be at
// most 20.
//
// Bad arguments give an error wrapping ErrSearchArgs, whose text is meant
// to be shown to the model.
func (t *Thinker) SearchTools(ctx context.Context, args json.RawMessage) (string, []retrieval.Match, error) {
	a, err := ParseSearchArgs(args)
	if err != nil {
		return "", nil, err
	}
	matches, err := t.search(ctx, a.Query, a.K, nil)
	if err != nil {
		return "", nil, err
	}
	found := make([]foundTool, len(matches))
	for i, m := range matches {
		found[i] = foundTool{Name: m.Tool.Name, Description: textproc.FirstSentence(m.Tool.Description, 160)}
	}
	b, err := json.Marshal(struct {
		Tools []foundTool `json:"tools"`
	}{found})
	if err != nil {
		return "", nil, fmt.Errorf("think: encode search_tools answer: %w", err)
	}
	return string(b), matches, nil
}
