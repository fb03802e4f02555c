package toolindex

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/tool"
)

// Fields is a tool's search text split by where it came from, so that a
// field-weighted ranker (BM25F) can trust a word in the name more than the
// same word deep in a parameter description. [Document] joins the fields.
type Fields struct {
	// Name is the tool's name split into words ("github__create_issue" gives
	// "github create issue"), followed by its original name's words when they
	// differ and its title.
	Name string
	// Description is the tool's description, as written.
	Description string
	// Params holds, for each parameter of the input schema (nested object
	// properties and array items included, bounded by
	// maxParamDepth/maxParams/maxParamsText), its name split into words, its
	// description and its enum values.
	Params string
	// Server is the name of the server the tool comes from, split into
	// words.
	Server string
}

// Bounds on what [DocumentFields] takes from an input schema: a tool with a
// huge schema must not drown its name and description, and must not cost
// unbounded time to index.
const (
	maxParamDepth = 4    // nesting levels of properties/items followed
	maxParams     = 64   // parameters described
	maxParamsText = 4000 // bytes of Params text
	maxEnumValues = 32   // enum values taken per parameter
)

// DocumentFields returns t's search text by field. It never fails: an input
// schema that is not valid JSON or not an object contributes nothing.
func DocumentFields(t tool.Tool) Fields {
	f := Fields{
		Name:        nameWords(t.Name),
		Description: strings.TrimSpace(t.Description),
		Server:      nameWords(t.Server),
	}
	if t.OriginalName != "" && t.OriginalName != t.Name {
		if w := nameWords(t.OriginalName); w != "" && !strings.Contains(f.Name, w) {
			f.Name = joinNonEmpty(" ", f.Name, w)
		}
	}
	if title := strings.TrimSpace(t.Title); title != "" {
		f.Name = joinNonEmpty(". ", f.Name, title)
	}
	if len(t.InputSchema) > 0 {
		var schema map[string]any
		if json.Unmarshal(t.InputSchema, &schema) == nil {
			w := paramWriter{}
			w.schema(schema, 0)
			f.Params = strings.TrimSpace(w.b.String())
		}
	}
	return f
}

// Document returns t's search text: what the embedder embeds and what the
// lexical index counts. It is the fields of [DocumentFields] in the order
// name, description, parameters, server, separated by blank lines:
//
//	get weather
//
//	Get the current weather for a city.
//
//	city: The city name. units: Temperature units. one of: celsius, fahrenheit.
//
//	weather server
func Document(t tool.Tool) string { return DocumentFields(t).text() }

// maxSemanticDescription bounds the bytes of description in a
// [SemanticDocument]: a sentence encoder reads what a description says first
// (Universal Sentence Encoder reads 128 pieces at most), and what it reads
// is what it costs. Measured on the public datasets and the paraphrase sets
// (docs/measurements.md), the first 256 bytes rank as well as the
// whole description.
const maxSemanticDescription = 256

// SemanticDocument returns the text a sentence encoder (Options.Semantic)
// embeds for t: its name split into words (and its title), then its
// description's first maxSemanticDescription bytes, cut at a word boundary.
// Parameters and server are left to the lexical index and the [Embedder]:
// they are not what a request paraphrases.
func SemanticDocument(t tool.Tool) string { return DocumentFields(t).semanticText() }

func (f Fields) semanticText() string {
	d := f.Description
	if len(d) > maxSemanticDescription {
		cut := maxSemanticDescription
		for cut > 0 && !utf8.RuneStart(d[cut]) {
			cut--
		}
		d = d[:cut]
		if i := strings.LastIndexAny(d, " \t\n"); i > maxSemanticDescription/2 {
			d = d[:i]
		}
		d = strings.TrimSpace(d)
	}
	return joinNonEmpty("\n\n", f.Name, d)
}

// text joins the fields as [Document] does.
func (f Fields) text() string {
	return joinNonEmpty("\n\n", f.Name, f.Description, f.Params, f.Server)
}

// nameWords splits an identifier into words separated by spaces
// ("math.factorial" gives "math factorial").
func nameWords(name string) string {
	return strings.Join(textproc.Words(name), " ")
}

func joinNonEmpty(sep string, parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, sep)
}

// paramWriter renders the parameters of a JSON schema as text, within the
// bounds above.
type paramWriter struct {
	b      strings.Builder
	params int
}

func (w *paramWriter) full() bool {
	return w.params >= maxParams || w.b.Len() >= maxParamsText
}

// schema writes the properties of s (and of what s composes: items, anyOf,
// oneOf, allOf) at the given depth.
func (w *paramWriter) schema(s map[string]any, depth int) {
	if depth > maxParamDepth || w.full() {
		return
	}
	if props, ok := s["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if w.full() {
				return
			}
			w.param(name, props[name], depth)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		w.schema(items, depth+1)
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if subs, ok := s[key].([]any); ok {
			for _, sub := range subs {
				if m, ok := sub.(map[string]any); ok {
					w.schema(m, depth+1)
				}
			}
		}
	}
}

// param writes one parameter: "name words: description. one of: a, b."
// followed by its nested parameters.
func (w *paramWriter) param(name string, v any, depth int) {
	w.params++
	p, _ := v.(map[string]any)
	var parts []string
	if nw := nameWords(name); nw != "" {
		parts = append(parts, nw+":")
	}
	if d, ok := p["description"].(string); ok && strings.TrimSpace(d) != "" {
		parts = append(parts, sentence(d))
	} else if d, ok := p["title"].(string); ok && strings.TrimSpace(d) != "" {
		parts = append(parts, sentence(d))
	}
	if enum := enumValues(p); enum != "" {
		parts = append(parts, "one of: "+enum+".")
	}
	if len(parts) > 0 {
		if w.b.Len() > 0 {
			w.b.WriteByte(' ')
		}
		w.b.WriteString(strings.Join(parts, " "))
	}
	if p != nil {
		w.schema(p, depth+1)
	}
}

// sentence trims d and ends it with a full stop, so that parameters read as
// separate sentences.
func sentence(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	if !strings.HasSuffix(d, ".") && !strings.HasSuffix(d, "?") && !strings.HasSuffix(d, "!") {
		d += "."
	}
	return d
}

// enumValues lists up to maxEnumValues enum values of a parameter (in the
// parameter itself or in its array items).
func enumValues(p map[string]any) string {
	enum, ok := p["enum"].([]any)
	if !ok {
		if items, ok := p["items"].(map[string]any); ok {
			enum, _ = items["enum"].([]any)
		}
	}
	var vals []string
	for _, e := range enum {
		if len(vals) == maxEnumValues {
			break
		}
		switch e := e.(type) {
		case string:
			if e != "" {
				vals = append(vals, e)
			}
		case float64, bool:
			vals = append(vals, fmt.Sprint(e))
		}
	}
	return strings.Join(vals, ", ")
}
