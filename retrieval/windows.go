package retrieval

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// Long descriptions (rankopt.Features.WindowWeight, off by default:
// docs/measurements.md, "Everyday requests"). The semantic signal reads a
// tool as its name and the first windowBytes of its description
// (toolindex.SemanticDocument: the Universal Sentence Encoder reads 128
// pieces at most, and averaging more text blurs what a description says
// first). A longer description says the rest in further windows, its
// sentences packed in order: each window is embedded as the tool's name
// and that stretch of text, in an index of windows kept beside the tool
// index, and a tool's semantic score is its best window's (its first, the
// tool index's own vector, included), a further window's counted at
// WindowWeight. A tool whose later text is what a request asks for is
// then found by it.

// windowBytes is the length of a window, the first one's
// (toolindex.SemanticDocument's bound on a description).
const windowBytes = 256

// maxWindows bounds the further windows of one tool: a description of
// about 4 KB, past which catalogs write examples and schemas in prose.
const maxWindows = 16

// windowSep joins a tool's name and a window's number in the window's
// document name; it is not a word character, so the number is a word of
// its own.
const windowSep = "\x1f"

// windows is the index of the further windows of the tool index's long
// descriptions, brought up to date when the tool index's generation moves;
// nil ix when no tool has a long description.
type windows struct {
	mu  sync.Mutex
	gen uint64
	ok  bool
	ix  *toolindex.Index
}

// windowIndex returns the index of windows for the tool index's current
// generation (nil when there is none, or no semantic signal).
func (r *Retriever) windowIndex(ctx context.Context) (*toolindex.Index, error) {
	if r.sem == nil {
		return nil, nil
	}
	w := r.win
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen := r.ix.Generation(); !w.ok || w.gen != gen {
		if err := w.update(ctx, r); err != nil {
			return nil, err
		}
		w.gen, w.ok = gen, true
	}
	if w.ix == nil || w.ix.Len() == 0 {
		return nil, nil
	}
	return w.ix, nil
}

// update makes w.ix hold the further windows of every long description of
// r's catalog (new ones embedded, those of tools gone or changed removed).
func (w *windows) update(ctx context.Context, r *Retriever) error {
	docs := map[string]tool.Tool{}
	for t := range r.ix.All() {
		ws := descriptionWindows(t.Description)
		for i, text := range ws[min(1, len(ws)):] {
			name := fmt.Sprintf("%s%s%d", t.Name, windowSep, i+2)
			docs[name] = tool.Tool{Name: name, Server: t.Server, Description: text}
		}
	}
	// Only the semantic vectors are searched; the window index shares the
	// tool index's vector cache, so a warm start embeds nothing.
	return r.syncSideIndex(ctx, &w.ix, "window index", slices.Collect(maps.Values(docs)))
}

// descriptionWindows cuts d into windows of at most windowBytes: its
// sentences, packed in order, a window ending where a sentence ends (a
// sentence longer than a window is cut at white space), at most
// 1+maxWindows of them; d itself when it fits in one. A window that
// starts with its sentence reads as a text of its own.
func descriptionWindows(d string) []string {
	d = strings.TrimSpace(d)
	if len(d) <= windowBytes {
		if d == "" {
			return nil
		}
		return []string{d}
	}
	var pieces []string
	for _, s := range sentences(d) {
		for len(s) > windowBytes {
			cut := windowBytes
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			if i := strings.LastIndexAny(s[:cut], " \t\n"); i > windowBytes/2 {
				cut = i
			}
			pieces = append(pieces, strings.TrimSpace(s[:cut]))
			s = strings.TrimSpace(s[cut:])
		}
		if s != "" {
			pieces = append(pieces, s)
		}
	}
	var out []string
	cur := ""
	for _, p := range pieces {
		if cur != "" && len(cur)+1+len(p) > windowBytes {
			out = append(out, cur)
			cur = ""
			if len(out) > maxWindows {
				return out
			}
		}
		if cur == "" {
			cur = p
		} else {
			cur += " " + p
		}
	}
	if cur != "" && len(out) <= maxWindows {
		out = append(out, cur)
	}
	return out
}

// withWindows merges into each part's semantic hits (best first) the hits
// of the tools' further windows, wins[i] for hits[i]: a tool keeps its best
// score; the merged lists are cut to depth.
func (r *Retriever) withWindows(hits, wins [][]toolindex.Hit, depth int) [][]toolindex.Hit {
	out := make([][]toolindex.Hit, len(hits))
	for i := range hits {
		if i >= len(wins) || len(wins[i]) == 0 {
			out[i] = hits[i]
			continue
		}
		best := make(map[string]toolindex.Hit, len(hits[i])+len(wins[i]))
		for _, h := range hits[i] {
			best[h.Tool.Name] = h
		}
		for _, h := range wins[i] {
			h.Score *= r.opts.feat.WindowWeight
			owner, _, _ := strings.Cut(h.Tool.Name, windowSep)
			if b, ok := best[owner]; ok {
				if h.Score > b.Score {
					b.Score = h.Score
					best[owner] = b
				}
				continue
			}
			t, ok := r.ix.Get(owner)
			if !ok {
				continue
			}
			best[owner] = toolindex.Hit{Tool: t, Score: h.Score}
		}
		merged := slices.Collect(maps.Values(best))
		slices.SortFunc(merged, func(a, b toolindex.Hit) int {
			if a.Score != b.Score {
				if a.Score > b.Score {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Tool.Name, b.Tool.Name)
		})
		out[i] = merged[:min(depth, len(merged))]
	}
	return out
}
