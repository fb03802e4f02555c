package retrieval

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsift/toolsift/tool"
)

// ErrSearch reports a Search that cannot be run: an empty query or k < 1.
var ErrSearch = errors.New("retrieval: bad search")

// Search returns the k tools that best match query, best first (fewer when
// the catalog is smaller or MinScore cuts the list). The query is searched
// as one text (no sentence split: it is one need); Mode, Servers
// and MinScore apply as in Retrieve; pinned and sticky tools get no special
// treatment. An empty query or k < 1 is an error wrapping ErrSearch.
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
	// One more than k is ranked, as Search always has ranked: the stages
	// after the fusion (keepInReach) see the list they were measured on.
	ranked, err := r.searchRanked(ctx, clip(query, maxPartRunes), k+1, in)
	if err != nil {
		return nil, err
	}
	var matches []Match
	for _, m := range ranked {
		if len(matches) == k || m.Score < r.opts.MinScore {
			break
		}
		matches = append(matches, m)
	}
	return matches, nil
}
