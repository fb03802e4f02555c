package gateway

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/toolsift/toolsift/think"
)

// A search_tools answer is think.SearchAnswer as JSON, its texts made safe
// for the client (sanitize.go). Every search answers with up to k found
// tools whose JSON, but for the score, is the same at each search that
// finds them at the same tier: answers keeps it, so that a search renders
// and escapes only what is new. What answerJSON writes is byte for byte
// json.Marshal of the sanitized answer (TestAnswerJSONIsMarshal).

// maxAnswerParts bounds the rendered tools an answers keeps; past it they
// are made anew.
const maxAnswerParts = 1 << 14

type answers struct {
	mu sync.Mutex
	m  map[answerKey]*answerPart
}

type answerKey struct{ name, tier string }

// answerPart is a found tool's JSON in an answer: pre, the score, post.
type answerPart struct {
	src       think.FoundTool // as Find gave it, but for the score
	pre, post []byte
}

// answerJSON returns ans as the client reads it: json.Marshal of ans with
// each tool's title, description and input schema made safe.
func (p *proxy) answerJSON(ans think.SearchAnswer) ([]byte, error) {
	if ans.Tools == nil {
		return marshalSafe(ans)
	}
	for _, t := range ans.Tools {
		if math.IsNaN(t.Score) || math.IsInf(t.Score, 0) {
			return marshalSafe(ans) // json.Marshal's error
		}
	}
	b := make([]byte, 0, 512*len(ans.Tools)+64)
	b = append(b, `{"tools":[`...)
	for i, t := range ans.Tools {
		if i > 0 {
			b = append(b, ',')
		}
		part, err := p.answers.part(t)
		if err != nil {
			return nil, err
		}
		b = append(b, part.pre...)
		b = appendJSONFloat(b, t.Score)
		b = append(b, part.post...)
	}
	b = append(b, ']')
	if len(ans.Omitted) > 0 {
		o, err := json.Marshal(ans.Omitted)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"omitted":`...)
		b = append(b, o...)
	}
	b = append(b, `,"tokens":`...)
	b = strconv.AppendInt(b, int64(ans.Tokens), 10)
	b = append(b, `,"listed":`...)
	b = strconv.AppendBool(b, ans.Listed)
	if ans.Incomplete != nil {
		in, err := json.Marshal(ans.Incomplete)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"incomplete":`...)
		b = append(b, in...)
	}
	return append(b, '}'), nil
}

// marshalSafe is json.Marshal of ans with its tools' texts made safe: what
// answerJSON writes, the long way.
func marshalSafe(ans think.SearchAnswer) ([]byte, error) {
	if ans.Tools != nil {
		ans.Tools = slices.Clone(ans.Tools)
		for i := range ans.Tools {
			t := &ans.Tools[i]
			t.Title, t.Description, t.InputSchema = text(t.Title), text(t.Description), schemaText(t.InputSchema)
		}
	}
	return json.Marshal(ans)
}

// part returns t's JSON but for its score, made or kept.
func (a *answers) part(t think.FoundTool) (*answerPart, error) {
	key := answerKey{t.Name, t.Tier}
	a.mu.Lock()
	e := a.m[key]
	a.mu.Unlock()
	if e != nil && sameFound(e.src, t) {
		return e, nil
	}
	e, err := newAnswerPart(t)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.m == nil || len(a.m) >= maxAnswerParts {
		a.m = map[answerKey]*answerPart{}
	}
	a.m[key] = e
	a.mu.Unlock()
	return e, nil
}

// newAnswerPart renders t as json.Marshal renders a think.FoundTool, its
// texts made safe, split around the score (the fields' order: name,
// server, score, title, description, inputSchema, tier).
func newAnswerPart(t think.FoundTool) (*answerPart, error) {
	t.Score = 0
	e := &answerPart{src: t}
	name, err := json.Marshal(t.Name)
	if err != nil {
		return nil, err
	}
	e.pre = append([]byte(`{"name":`), name...)
	if t.Server != "" {
		server, err := json.Marshal(t.Server)
		if err != nil {
			return nil, err
		}
		e.pre = append(append(e.pre, `,"server":`...), server...)
	}
	e.pre = append(e.pre, `,"score":`...)
	rest, err := json.Marshal(struct {
		Title       string          `json:"title,omitempty"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Tier        string          `json:"tier"`
	}{text(t.Title), text(t.Description), schemaText(t.InputSchema), t.Tier})
	if err != nil {
		return nil, err
	}
	e.post = append([]byte{','}, rest[1:]...) // {"title":...} → ,"title":...}
	return e, nil
}

// sameFound reports whether a and b render the same but for the score.
func sameFound(a, b think.FoundTool) bool {
	return a.Name == b.Name && a.Server == b.Server && a.Title == b.Title && a.Description == b.Description &&
		a.Tier == b.Tier && bytes.Equal(a.InputSchema, b.InputSchema)
}

// appendJSONFloat appends f as encoding/json writes a float64 (ES6's
// number to string: 'f' but for the very small and very large).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
