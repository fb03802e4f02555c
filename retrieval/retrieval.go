package retrieval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolsift/toolsift/internal/rankopt"
	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/usage"
)

// ErrOptions reports Options that New cannot use.
var ErrOptions = errors.New("retrieval: invalid options")

// Mode chooses which of the index's signals rank tools.
type Mode int

const (
	// Hybrid fuses every signal of the index: BM25F, the Embedder's
	// vectors and, when the index has one, the Semantic embedder's (the
	// default).
	Hybrid Mode = iota
	// Vector ranks by the Embedder's vectors only.
	Vector
	// Lexical ranks by BM25F only.
	Lexical
	// Semantic ranks by the Semantic embedder's vectors only; the index
	// must have one.
	Semantic
)

func (m Mode) String() string {
	switch m {
	case Hybrid:
		return "hybrid"
	case Vector:
		return "vector"
	case Lexical:
		return "lexical"
	case Semantic:
		return "semantic"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Weights are the weights of the index's signals in Hybrid fusion.
type Weights struct {
	Lexical  float64 // BM25F
	Vector   float64 // the Embedder's vectors (SearchVector)
	Semantic float64 // the Semantic embedder's vectors (SearchSemantic)
}

// DefaultWeights are the weights of Hybrid fusion, measured on the public
// datasets and paraphrase sets (docs/measurements.md): BM25F
// counts most, the sentence encoder next, the hashed n-grams of the local
// embedder least. An index without a semantic signal fuses the other two
// with the same weights.
var DefaultWeights = Weights{Lexical: 1, Vector: 0.5, Semantic: 0.75}

// fusion chooses how ranked lists (vector and lexical, for each part of a
// Query) are combined into one ranking.
type fusion int

const (
	// weightedSum is a weighted sum of normalised scores (the default).
	// A list's score for a tool is how far it stands above the list's
	// last candidate, in standard deviations of the list's scores
	// ((s − last)/σ): a tool absent from a list gets 0, and a list whose
	// best stands far above the rest (a confident signal) speaks louder
	// than one whose scores are all alike. It measured better than
	// dividing by the list's best, than min-max and than RRF
	// (docs/measurements.md): unlike RRF it keeps how much better
	// the first candidates are than the fifth.
	weightedSum fusion = iota
	// rrf is weighted reciprocal-rank fusion (Cormack et al. 2009): a
	// list contributes weight×61/(60+rank) to its tools, whatever their
	// scores. Measured and left off: rankopt.Features.RRF.
	rrf
)

// defaultServerWeight is the weight of a tool's server in its score
// (Options.ServerWeight), measured on the public datasets, the paraphrase
// and the everyday sets (docs/measurements.md, "Everyday requests", third
// round): with the lift in proportion to the tool's own score, 0.75, 1
// and 1.5 rank alike; at 1 a tool whose server fits the request best
// keeps its score and one whose server does not fit at all keeps half.
const defaultServerWeight = 1

// DefaultK is how many tools Retrieve returns by default: enough for a
// token budget of a few thousand tokens to choose from (budget.Select
// compresses the tail before it drops it), measured with the agent's
// default budget in think.
const DefaultK = 20

func init() {
	rankopt.Set = func(opts any, f rankopt.Features) { opts.(*Options).feat = f }
}

// Options configure a Retriever. The zero value (or nil) gives the
// defaults.
type Options struct {
	// K is the number of retrieved matches, not counting pinned and sticky
	// tools. Default DefaultK.
	K int
	// Mode is the ranking signal. Default Hybrid.
	Mode Mode
	// MinScore drops retrieved (not pinned, not sticky) matches whose Score
	// is below it; 0 (the default) keeps all K. Score is in [0, 1]: the
	// fused score divided by what a tool that is best in every list
	// searched (every signal; whole text and best sentence) would get, so
	// 1 means best everywhere. It is relative to this query's best
	// candidates, not an absolute relevance: it trims the tail (a tool
	// that only one signal finds scores at most that signal's share of
	// the weights), but it cannot tell that nothing in the index fits. 0.4
	// is a reasonable trim.
	MinScore float64
	// Pinned names tools that every Retrieve returns first, whatever the
	// query (names not in the index are skipped).
	Pinned []string
	// NoSticky turns off sticky tools. By default the tools in Query.Used
	// are returned after the pinned ones, so that a tool the agent is
	// working with does not vanish from its next step.
	NoSticky bool
	// Servers, when not empty, restricts retrieved tools to these servers
	// (Tool.Server). Pinned and sticky tools are not filtered.
	Servers []string
	// Depth is how many candidates each list (vector, lexical) contributes
	// to fusion. Default max(50, 4*K).
	Depth int
	// Weights are the signals' weights in Hybrid mode. All zero means
	// DefaultWeights; negative weights are refused.
	Weights Weights
	// ServerWeight ranks the servers too (one document per server: its
	// name, its tools' names and first sentences) and lifts each tool by
	// its server's score: tool × (1 + w × server) / (1 + w), a lift in
	// proportion to the tool's own score (servers.go). A request of
	// several asks (a Task with no Thought, split into its asks as
	// intents.go splits it) is not lifted. Only the Hybrid
	// mode is lifted, and not in a catalog of fewer than two servers.
	// Default 1: a tool whose server fits the request best keeps its
	// score, one whose server does not fit at all keeps half;
	// NoServerWeight turns it off.
	ServerWeight   float64
	NoServerWeight bool
	// Usage, when set, is the memory of the calls earlier requests led to
	// (usage.Memory, kept by Record): every ranking asks it what the
	// caller's earlier requests like this one vote for (the caller of the
	// ranking's context, usage.CallerFrom) and lifts each voted tool by
	// its vote, s + v (every score then divided by the best when one
	// passed 1). Nil (the default) ranks without it, at no cost.
	Usage *usage.Memory
	// feat are the ranking features measured and left off, set by the
	// benchmarks and tests through internal/rankopt.
	feat rankopt.Features
}

// Query is the agent's state for one step: what the retriever turns into
// searches.
type Query struct {
	// Task is the user's request.
	Task string `json:"task"`
	// Thought is the model's latest reasoning or tool request, the best
	// evidence of what is needed now. It weighs more than Task.
	Thought string `json:"thought,omitempty"`
	// Observations are recent tool results, oldest first. Only the last
	// few, truncated, are used, with a low weight.
	Observations []string `json:"observations,omitempty"`
	// Used names tools the agent already called in this run (sticky).
	Used []string `json:"used,omitempty"`
}

// Match is one retrieved tool.
type Match struct {
	Tool tool.Tool
	// Score is the fused score in [0, 1] (see Options.MinScore); 0 for a
	// pinned or sticky tool that the query did not retrieve.
	Score float64
	// Pinned is set for tools named in Options.Pinned, Sticky for tools
	// named in Query.Used.
	Pinned, Sticky bool
}

// Retriever ranks an Index's tools for an agent's step. It is safe for
// concurrent use, including while the Index is being updated.
type Retriever struct {
	ix      *toolindex.Index
	emb     toolindex.Embedder
	sem     toolindex.Embedder // nil without a semantic signal
	opts    Options
	servers map[string]bool
	srv     *servers    // the server documents (Options.ServerWeight)
	names   *names      // tools by name, for requests that name them
	win     *windows    // long descriptions' further windows
	vocab   *vocabulary // the catalog's index terms (Options.Usage)
	queries *queryCache // shared by copies (Explain ranks with one per signal)
}

// New returns a Retriever over ix.
func New(ix *toolindex.Index, opts *Options) (*Retriever, error) {
	if ix == nil {
		return nil, fmt.Errorf("%w: nil index", ErrOptions)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.K < 0:
		return nil, fmt.Errorf("%w: K = %d", ErrOptions, o.K)
	case o.Mode < Hybrid || o.Mode > Semantic:
		return nil, fmt.Errorf("%w: %v", ErrOptions, o.Mode)
	case o.Mode == Semantic && ix.Semantic() == nil:
		return nil, fmt.Errorf("%w: mode semantic needs an index with a Semantic embedder", ErrOptions)
	case o.Weights.Lexical < 0 || o.Weights.Vector < 0 || o.Weights.Semantic < 0 ||
		math.IsNaN(o.Weights.Lexical+o.Weights.Vector+o.Weights.Semantic) || math.IsInf(o.Weights.Lexical+o.Weights.Vector+o.Weights.Semantic, 0):
		return nil, fmt.Errorf("%w: Weights = %+v", ErrOptions, o.Weights)
	case o.MinScore < 0 || o.MinScore > 1 || math.IsNaN(o.MinScore):
		return nil, fmt.Errorf("%w: MinScore = %v, want 0..1", ErrOptions, o.MinScore)
	case o.Depth < 0:
		return nil, fmt.Errorf("%w: Depth = %d", ErrOptions, o.Depth)
	case o.ServerWeight < 0 || math.IsNaN(o.ServerWeight) || math.IsInf(o.ServerWeight, 0):
		return nil, fmt.Errorf("%w: ServerWeight = %v", ErrOptions, o.ServerWeight)
	case o.feat.IntentQuota < 0:
		return nil, fmt.Errorf("%w: IntentQuota = %d", ErrOptions, o.feat.IntentQuota)
	case o.feat.Feedback < 0:
		return nil, fmt.Errorf("%w: Feedback = %d", ErrOptions, o.feat.Feedback)
	case o.feat.Associate < 0 || math.IsNaN(o.feat.Associate) || math.IsInf(o.feat.Associate, 0):
		return nil, fmt.Errorf("%w: Associate = %v", ErrOptions, o.feat.Associate)
	case o.feat.WindowWeight < 0 || o.feat.WindowWeight > 1 || math.IsNaN(o.feat.WindowWeight):
		return nil, fmt.Errorf("%w: WindowWeight = %v, want 0..1", ErrOptions, o.feat.WindowWeight)
	}
	if o.K == 0 {
		o.K = DefaultK
	}
	switch {
	case o.NoServerWeight:
		o.ServerWeight = 0
	case o.ServerWeight == 0:
		o.ServerWeight = defaultServerWeight
	}
	if o.Depth == 0 {
		o.Depth = max(50, 4*o.K)
	}
	o.Depth = max(o.Depth, o.K)
	if o.Weights == (Weights{}) {
		o.Weights = DefaultWeights
	}
	o.Pinned = slices.Clone(o.Pinned)
	r := &Retriever{ix: ix, emb: ix.Embedder(), sem: ix.Semantic(), opts: o, srv: &servers{}, names: &names{}, win: &windows{}, vocab: &vocabulary{}, queries: &queryCache{}}
	if len(o.Servers) > 0 {
		r.servers = make(map[string]bool, len(o.Servers))
		for _, s := range o.Servers {
			r.servers[s] = true
		}
	}
	return r, nil
}

// Bounds on the text taken from a Query.
const (
	maxPartRunes        = 2000 // of Task and of Thought
	maxObservations     = 2    // most recent ones used
	maxObservationRunes = 300  // of each
)

// Weights of a Query's parts in fusion: the latest thought says best what
// is needed now; the task keeps the run on topic; observations only hint.
const (
	thoughtWeight     = 1.0
	taskWeight        = 0.6
	observationWeight = 0.25
)

// part is one search text and its weight.
type part struct {
	text   string
	weight float64
	// group identifies parts whose lists are aggregated by maximum, not
	// summed: the sentences of one text.
	group int
	// wordsOnly parts (a feedback expansion) are not searched by the
	// semantic signal.
	wordsOnly bool
}

// maxSentences bounds the sentence searches made for one text.
const maxSentences = 8

// parts turns q into weighted search texts. Each text (thought, task,
// observations) is one part, in a group of its own; a text with several
// sentences adds one part per sentence, all in a second group, whose lists
// fusion aggregates by maximum: the tool that best fits one of the
// sentences counts as much as the tool that best fits the whole text.
func parts(q Query) []part {
	var ps []part
	group := 0
	addText := func(t string, w float64) {
		ps = append(ps, part{text: t, weight: w, group: group})
		group++
		ss := sentences(t)
		if len(ss) < 2 {
			return
		}
		for _, s := range ss {
			ps = append(ps, part{text: s, weight: w, group: group})
		}
		group++
	}
	if t := clip(q.Thought, maxPartRunes); t != "" {
		addText(t, thoughtWeight)
	}
	if t := clip(q.Task, maxPartRunes); t != "" {
		w := taskWeight
		if len(ps) == 0 {
			w = thoughtWeight
		}
		addText(t, w)
	}
	obs := q.Observations
	if len(obs) > maxObservations {
		obs = obs[len(obs)-maxObservations:]
	}
	var ob []string
	for _, o := range obs {
		if t := clip(o, maxObservationRunes); t != "" {
			ob = append(ob, t)
		}
	}
	if len(ob) > 0 {
		// Observations are data, not requests: searched whole only.
		ps = append(ps, part{text: strings.Join(ob, "\n"), weight: observationWeight, group: group})
	}
	return ps
}

// sentences splits t at sentence ends (., !, ? or ; before white space,
// and line breaks; a full stop after an abbreviation or a list number does
// not end a sentence). A sentence of fewer than minSentenceWords words joins
// the one before it (or after it, at the start), so that "Thanks." or a
// numbered list's "1." do not become searches of their own. At most
// maxSentences are returned: the rest joins the last one.
func sentences(t string) []string {
	const minSentenceWords = 3
	var raw []string
	start := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		end := false
		switch c {
		case '\n':
			end = true
		case '.', '!', '?', ';':
			end = (i+1 == len(t) || t[i+1] == ' ' || t[i+1] == '\n' || t[i+1] == '\t') &&
				(c != '.' || textproc.SentenceEnd(t[start:i]))
		}
		if end {
			raw = append(raw, t[start:i+1])
			start = i + 1
		}
	}
	if start < len(t) {
		raw = append(raw, t[start:])
	}
	var out []string
	pending := ""
	for _, r := range raw {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if pending != "" {
			r = pending + " " + r
			pending = ""
		}
		if len(strings.Fields(r)) < minSentenceWords {
			if len(out) > 0 {
				out[len(out)-1] += " " + r
			} else {
				pending = r
			}
			continue
		}
		out = append(out, r)
	}
	if pending != "" {
		if len(out) > 0 {
			out[len(out)-1] += " " + pending
		} else {
			out = append(out, pending)
		}
	}
	if len(out) > maxSentences {
		out[maxSentences-1] = strings.Join(out[maxSentences-1:], " ")
		out = out[:maxSentences]
	}
	return out
}

// clip trims s and cuts it to at most n runes.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// Retrieve returns the tools for the step described by q: the pinned tools
// (in Options.Pinned order), then the sticky ones (in Query.Used order),
// then up to K retrieved tools, best first, with a Score of at least
// MinScore. A tool appears once. A query without text returns only pinned
// and sticky tools.
func (r *Retriever) Retrieve(ctx context.Context, q Query) ([]Match, error) {
	ranked, err := r.ranked(ctx, q, r.opts.K+len(r.opts.Pinned)+len(q.Used))
	if err != nil {
		return nil, err
	}
	score := make(map[string]float64, len(ranked))
	for _, m := range ranked {
		score[m.Tool.Name] = m.Score
	}
	var out []Match
	seen := map[string]int{}
	add := func(name string, pinned, sticky bool) {
		if i, ok := seen[name]; ok {
			out[i].Pinned = out[i].Pinned || pinned
			out[i].Sticky = out[i].Sticky || sticky
			return
		}
		t, ok := r.ix.Get(name)
		if !ok {
			return
		}
		seen[name] = len(out)
		out = append(out, Match{Tool: t, Score: score[name], Pinned: pinned, Sticky: sticky})
	}
	for _, name := range r.opts.Pinned {
		add(name, true, false)
	}
	if !r.opts.NoSticky {
		for _, name := range q.Used {
			add(name, false, true)
		}
	}
	n := 0
	for _, m := range ranked {
		if n == r.opts.K || m.Score < r.opts.MinScore {
			break
		}
		if _, ok := seen[m.Tool.Name]; ok {
			continue
		}
		seen[m.Tool.Name] = len(out)
		out = append(out, m)
		n++
	}
	return out, nil
}

// filter returns the index filter for the Servers option (nil for none).
func (r *Retriever) filter() func(tool.Tool) bool {
	if r.servers == nil {
		return nil
	}
	return func(t tool.Tool) bool { return r.servers[t.Server] }
}
