package retrieval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/tool"
)

// SearchToolName is the name of the search_tools meta-tool.
const SearchToolName = "search_tools"

// ErrSearchArgs reports search_tools arguments that cannot be used (not a
// JSON object, no query, k out of range).
var ErrSearchArgs = errors.New("retrieval: bad search_tools arguments")

// defaultSearchK is how many tools a search_tools answer holds when the
// model names no k (not retrieval's DefaultK, what a step ranks);
// maxSearchK is the most it may ask for.
const (
	defaultSearchK = 5
	maxSearchK     = 20
)

// SearchTool returns the definition of the search_tools meta-tool: give it
// to the model beside the retrieved tools so that it can ask for tools the
// retriever did not offer. Answer its calls with Retriever.SearchTools.
// Its input schema is the one of every search_tools (toolsift serve's too).
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
// It is the one rule for them: Retriever.SearchTools (the agent's and the
// library's answer) and toolsift serve's search_tools both read them
// through it. Bad arguments give an error wrapping ErrSearchArgs, whose
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

// ErrSearch reports a Search that cannot be run: an empty query or k < 1.
var ErrSearch = errors.New("retrieval: bad search")

// Search returns the k tools that best match query, best first (fewer when
// the catalog is smaller or MinScore cuts the list). The query is searched
// as one text (no sentence split: it is one need); Mode, Fusion, Servers
// and MinScore apply as in Retrieve; pinned and sticky tools get no special
// treatment, and search_tools never finds itself. An empty query or k < 1
// is an error wrapping ErrSearch.
func (r *Retriever) Search(ctx context.Context, query string, k int) ([]Match, error) {
	return r.SearchWithin(ctx, query, k, nil)
}

// SearchWithin is Search among the tools in accepts (nil: all): the others
// are not ranked at all (every signal's scan passes over them), so the
// matches, their order and their scores are what a catalog without them
// would give but for the lexical signal's term statistics. toolsift serve
// searches so within a caller's scope. in is asked from the scans'
// goroutines one at a time, about each candidate that would enter a
// signal's best, while the index is read-locked: it need not be safe for
// concurrent use, should be quick, and must not call the index.
func (r *Retriever) SearchWithin(ctx context.Context, query string, k int, in func(tool.Tool) bool) ([]Match, error) {
	query = strings.TrimSpace(query)
	switch {
	case query == "":
		return nil, fmt.Errorf("%w: empty query", ErrSearch)
	case k < 1:
		return nil, fmt.Errorf("%w: k = %d, want at least 1", ErrSearch, k)
	}
	ranked, err := r.searchRanked(ctx, clip(query, maxPartRunes), k+1, in)
	if err != nil {
		return nil, err
	}
	var matches []Match
	for _, m := range ranked {
		if len(matches) == k || m.Score < r.opts.MinScore {
			break
		}
		if m.Tool.Name != SearchToolName {
			matches = append(matches, m)
		}
	}
	return matches, nil
}

// SearchTools answers a search_tools call, the model's form of Search: args
// is the JSON arguments the model sent. It returns the answer for the model
// (a compact JSON object {"tools":[{"name","description"}...]} with
// one-line descriptions) and the matches, which the caller adds to the
// tools of the next step. K defaults to 5 and may be at most 20.
//
// Bad arguments give an error wrapping ErrSearchArgs, whose text is meant
// to be shown to the model.
func (r *Retriever) SearchTools(ctx context.Context, args json.RawMessage) (string, []Match, error) {
	a, err := ParseSearchArgs(args)
	if err != nil {
		return "", nil, err
	}
	matches, err := r.Search(ctx, a.Query, a.K)
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
		return "", nil, fmt.Errorf("retrieval: encode search_tools answer: %w", err)
	}
	return string(b), matches, nil
}
