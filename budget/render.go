package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/tool"
)

// ErrBadTool reports a tool that cannot be rendered: its input schema is not
// a JSON object schema ("type":"object", or no type, which CountTool fills
// in), nor true (any arguments, sent as an empty object schema). Schemas of
// another type are never sent: the APIs reject them.
var ErrBadTool = errors.New("budget: bad tool")

// Tier is how much of a tool's definition is sent. Every tier is a valid JSON
// Schema the model can still call: `type`, `required`, `enum` and `const`
// values and the nesting of objects and arrays are never dropped.
type Tier int

const (
	// TierFull is the tool as its server declared it.
	TierFull Tier = iota
	// TierNoParamDocs drops the annotations of the parameter schema
	// (description, title, examples, default, $comment) at every depth,
	// and $schema (kept only for a draft-07 schema that uses items arrays,
	// additionalItems or dependencies, which parse differently without it).
	TierNoParamDocs
	// TierShortDescription is TierNoParamDocs with the tool description cut
	// to its first sentence (at most 300 runes).
	TierShortDescription
	// TierMinimal is the name, a one-line description (at most
	// 120 runes) and bare parameter types: only type,
	// properties, required, items, enum, const, the anyOf/oneOf/allOf
	// structure and $ref with its $defs are kept.
	TierMinimal
	// TierName is the name and the one-line description of TierMinimal,
	// marked as listed (nameHint), with no parameters: a tool the model
	// sees, and calls once search_tools has given its schema. Select uses
	// it only for Budget.Listing, in a step that offers search_tools.
	TierName
)

// NumTiers is the number of tiers; they are 0 (TierFull) to NumTiers-1.
const NumTiers = 5

// Description length caps of the compressed tiers, in runes.
const (
	maxShortDescription   = 300
	maxMinimalDescription = 120
)

var tierNames = [NumTiers]string{"full", "no-param-docs", "short-description", "minimal", "name"}

// String returns the tier's name: "full", "no-param-docs",
// "short-description", "minimal" or "name".
func (t Tier) String() string {
	if t >= 0 && int(t) < NumTiers {
		return tierNames[t]
	}
	return fmt.Sprintf("Tier(%d)", int(t))
}

// MarshalText writes the tier as its name (String), so JSON and logs show
// "short-description" where a table does, not a number.
func (t Tier) MarshalText() ([]byte, error) {
	if t < 0 || int(t) >= NumTiers {
		return nil, fmt.Errorf("budget: no tier %d", int(t))
	}
	return []byte(tierNames[t]), nil
}

// UnmarshalText reads a tier's name, as MarshalText writes it.
func (t *Tier) UnmarshalText(b []byte) error {
	for i, n := range tierNames {
		if n == string(b) {
			*t = Tier(i)
			return nil
		}
	}
	return fmt.Errorf("budget: unknown tier %q (want full, no-param-docs, short-description, minimal or name)", b)
}

// quality is how much of a tool's usefulness to the model a tier keeps, from
// 1 (TierFull) down; Select maximises Σ score × quality. The values are
// judgement, not measurement: parameter docs matter for filling arguments,
// the description for choosing the tool, and a bare schema is still callable.
func (t Tier) quality() float64 {
	switch t {
	case TierFull:
		return 1
	case TierNoParamDocs:
		return 0.9
	case TierShortDescription:
		return 0.75
	case TierMinimal:
		return 0.5
	case TierName:
		return 0.25
	}
	return 0
}

// NameHint ends the description of a tool sent at TierName: the model is
// told that the parameters are not shown, and where to get them.
const NameHint = " (parameters: ask search_tools)"

// Overheads that a provider adds to prompt_tokens beyond what CountTool counts.
// They are approximations: OpenAI does not send the tools' JSON to the
// model; it renders them in a TypeScript-like `namespace functions { ... }`
// block (parameter descriptions as // comments, types as TypeScript types).
// The compact JSON that CountTool counts is usually somewhat larger than that
// rendering (quotes, "type"/"properties" keys), so it is a conservative
// budget, and it is exact, reproducible and provider-independent. The
// constants are from OpenAI's published token-counting recipe (the
// openai-cookbook "How to count tokens with tiktoken", for gpt-4o and gpt-4);
// other providers differ.
const (
	// ToolsRequestOverhead is added once to a request that has any tools
	// (the namespace wrapper).
	ToolsRequestOverhead = 12
	// ToolOverheadO200K is added per tool for o200k_base models.
	ToolOverheadO200K = 7
	// ToolOverheadCL100K is added per tool for cl100k_base models.
	ToolOverheadCL100K = 10
)

// Rendered is a tool at one tier: what to send and what it costs.
type Rendered struct {
	Tier Tier
	// Tokens is the token count of the tool as it appears in a Chat
	// Completions request, compact JSON:
	// {"type":"function","function":{"name":..,"description":..,"parameters":..}}
	// ("description" omitted when empty).
	Tokens int
	// Description and Parameters are what to send as the function's
	// description and parameters. Parameters is compact JSON with object
	// keys sorted, numbers as written and no HTML escaping: decoding it into
	// a map[string]any and encoding it again (as openai-go does) changes at
	// most the escaping of <, > and &, which the provider decodes anyway.
	Description string
	Parameters  json.RawMessage
}

// rendered holds the tiers of one tool rendered so far.
type rendered struct {
	tiers [NumTiers]Rendered
	done  [NumTiers]bool
	used  bool // looked up since the last sweep
}

// minCache is the render cache's initial bound (tools, not tiers). The
// bound grows to fit the working set: when the cache is full, a sweep drops
// the entries not used since the previous sweep (tools that left the
// catalog or changed); if every entry was used, the bound doubles instead.
// A catalog of any size is thus rendered once, not re-rendered whenever it
// crosses a fixed bound (clearing at 65,536 made one agent step cost 3.1 s
// at 70,000 tools).
const minCache = 1 << 16

// CountTool counts the tokens of a tool as it is sent at tier, and returns
// what it counted: the description and parameters to send at that tier.
// Results are cached by the tool's content hash (tool.Hash, or
// tool.ContentHash when empty) and tier, so a tool is rendered and counted
// once per Tokenizer.
func (t *Tokenizer) CountTool(tool tool.Tool, tier Tier) (Rendered, error) {
	if tier < 0 || int(tier) >= NumTiers {
		return Rendered{}, fmt.Errorf("%w: tool %q: no tier %d", ErrBadTool, tool.Name, int(tier))
	}
	var all [NumTiers]Rendered
	if err := t.render(tool, &all, tier); err != nil {
		return Rendered{}, err
	}
	return all[tier], nil
}

// render fills out with the tool's renderings at the given tiers (all of
// them when none are given), from the cache when it can: one lookup.
func (t *Tokenizer) render(tl tool.Tool, out *[NumTiers]Rendered, tiers ...Tier) error {
	if len(tiers) == 0 {
		tiers = allTiers[:]
	}
	h := tl.Hash
	if h == "" {
		h = tool.ContentHash(tl)
	}
	t.mu.Lock()
	c := t.cache[h]
	if c != nil {
		c.used = true
		missing := false
		for _, tier := range tiers {
			if !c.done[tier] {
				missing = true
				break
			}
			out[tier] = c.tiers[tier]
		}
		if !missing {
			t.mu.Unlock()
			return nil
		}
	}
	t.mu.Unlock()

	var fresh rendered
	for _, tier := range tiers {
		desc, params, err := compress(tl, tier)
		if err != nil {
			return err
		}
		r := Rendered{Tier: tier, Description: desc, Parameters: params}
		r.Tokens = t.Count(string(functionJSON(tl.Name, desc, params)))
		fresh.tiers[tier], fresh.done[tier] = r, true
		out[tier] = r
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	c = t.cache[h]
	if c == nil {
		if len(t.cache) >= t.cacheMax {
			t.sweepLocked()
		}
		c = &rendered{used: true}
		t.cache[h] = c
	}
	for _, tier := range tiers {
		c.tiers[tier], c.done[tier] = fresh.tiers[tier], true
	}
	return nil
}

var allTiers = [NumTiers]Tier{TierFull, TierNoParamDocs, TierShortDescription, TierMinimal, TierName}

// Format is the shape of a tool in one API's list of tools.
type Format int

const (
	// FormatChat is a Chat Completions tool:
	// {"type":"function","function":{"name":..,"description":..,"parameters":..}}.
	// Rendered.Tokens counts these bytes.
	FormatChat Format = iota
	// FormatResponses is an OpenAI Responses API function tool:
	// {"type":"function","name":..,"description":..,"parameters":..,"strict":false}
	// (strict false: the API's strict mode would reject most MCP schemas).
	FormatResponses
	// FormatAnthropic is an Anthropic Messages API tool:
	// {"name":..,"description":..,"input_schema":..}.
	FormatAnthropic
	// FormatMCP is an entry of an MCP tools/list result:
	// {"name":..,"description":..,"inputSchema":..}.
	FormatMCP
	numFormats
)

var formatNames = [numFormats]string{"chat", "responses", "anthropic", "mcp"}

func (f Format) String() string {
	if f < 0 || f >= numFormats {
		return fmt.Sprintf("Format(%d)", int(f))
	}
	return formatNames[f]
}

// parseFormat returns the Format named s ("chat", "responses",
// "anthropic", "mcp").
func parseFormat(s string) (Format, error) {
	for f, n := range formatNames {
		if n == s {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("budget: unknown tool format %q (want chat, responses, anthropic or mcp)", s)
}

// JSON returns the compact JSON of the tool named name as one entry of the
// tools of a request in format f ("description" omitted when empty). The
// description and parameters are the tier's in every format; Tokens counts
// the FormatChat bytes. An unknown format is FormatChat.
func (r Rendered) JSON(name string, f Format) []byte {
	var b bytes.Buffer
	field := func(key string, v []byte) {
		b.WriteString(`,"` + key + `":`)
		b.Write(v)
	}
	switch f {
	case FormatResponses:
		b.WriteString(`{"type":"function","name":`)
		b.Write(marshal(name))
		if r.Description != "" {
			field("description", marshal(r.Description))
		}
		field("parameters", r.Parameters)
		b.WriteString(`,"strict":false}`)
	case FormatAnthropic, FormatMCP:
		b.WriteString(`{"name":`)
		b.Write(marshal(name))
		if r.Description != "" {
			field("description", marshal(r.Description))
		}
		key := "input_schema"
		if f == FormatMCP {
			key = "inputSchema"
		}
		field(key, r.Parameters)
		b.WriteString(`}`)
	default:
		return functionJSON(name, r.Description, r.Parameters)
	}
	return b.Bytes()
}

func functionJSON(name, desc string, params json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"function","function":{"name":`)
	b.Write(marshal(name))
	if desc != "" {
		b.WriteString(`,"description":`)
		b.Write(marshal(desc))
	}
	b.WriteString(`,"parameters":`)
	b.Write(params)
	b.WriteString(`}}`)
	return b.Bytes()
}

// marshal encodes v as compact JSON without HTML escaping: the provider
// decodes the request, so "<" is what the model sees, not "\u003c".
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only reachable with values json cannot encode; we encode strings
		// and trees decoded from JSON.
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// emptyParameters is what a tool without an input schema is sent with: the
// APIs require an object schema.
var emptyParameters = json.RawMessage(`{"properties":{},"type":"object"}`)

func compress(tool tool.Tool, tier Tier) (string, json.RawMessage, error) {
	desc := strings.TrimSpace(tool.Description)
	switch tier {
	case TierShortDescription:
		desc = textproc.FirstSentence(desc, maxShortDescription)
	case TierMinimal:
		desc = textproc.FirstSentence(desc, maxMinimalDescription)
	case TierName:
		desc = textproc.FirstSentence(desc, maxMinimalDescription) + NameHint
	}
	if len(bytes.TrimSpace(tool.InputSchema)) == 0 {
		return desc, emptyParameters, nil
	}
	dec := json.NewDecoder(bytes.NewReader(tool.InputSchema))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return "", nil, fmt.Errorf("%w: tool %q: input schema: %v", ErrBadTool, tool.Name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", nil, fmt.Errorf("%w: tool %q: input schema: data after the JSON value", ErrBadTool, tool.Name)
	}
	// The model gets an object schema or nothing: the APIs reject
	// anything else, and the whole request with it.
	switch r := root.(type) {
	case bool:
		if !r {
			return "", nil, fmt.Errorf("%w: tool %q: input schema is false: no arguments are valid", ErrBadTool, tool.Name)
		}
		return desc, emptyParameters, nil
	case map[string]any:
		typ, ok := r["type"]
		if !ok {
			// An object schema that leaves out the type (often with
			// properties): say what it means.
			r["type"] = "object"
		} else if typ != "object" {
			return "", nil, fmt.Errorf("%w: tool %q: input schema has type %s, not \"object\"", ErrBadTool, tool.Name, marshal(typ))
		}
	default:
		return "", nil, fmt.Errorf("%w: tool %q: input schema is a JSON %s, not an object", ErrBadTool, tool.Name, jsonKind(root))
	}
	if tier == TierName {
		// Checked as every tier is, sent without parameters.
		return desc, emptyParameters, nil
	}
	if tier != TierFull {
		keepDraft := usesDraft7Only(root)
		root = strip(root, tier >= TierMinimal)
		if m, ok := root.(map[string]any); ok && !keepDraft {
			// $schema changes nothing the model sees. It is kept only when
			// removing it would change how a draft-07 schema parses.
			delete(m, "$schema")
		}
	}
	return desc, marshal(root), nil
}

// annotations are schema keywords that describe but do not constrain.
var annotations = map[string]bool{
	"description": true, "title": true, "examples": true, "example": true,
	"default": true, "$comment": true, "markdownDescription": true,
	"enumDescriptions": true, "markdownEnumDescriptions": true,
}

// minimalKeep are the keywords TierMinimal keeps: the shape of the value.
var minimalKeep = map[string]bool{
	"type": true, "properties": true, "required": true, "items": true,
	"prefixItems": true, "enum": true, "const": true, "anyOf": true,
	"oneOf": true, "allOf": true, "$ref": true, "$defs": true,
	"definitions": true, "$id": true, "$anchor": true, "$dynamicRef": true,
	"$dynamicAnchor": true, "$schema": true, "additionalProperties": true,
}

// Keywords whose values are schemas, maps of schemas or arrays of schemas.
var (
	schemaKeys    = map[string]bool{"additionalProperties": true, "additionalItems": true, "contains": true, "propertyNames": true, "not": true, "if": true, "then": true, "else": true, "unevaluatedProperties": true, "unevaluatedItems": true, "items": true}
	schemaMapKeys = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true}
	schemaArrKeys = map[string]bool{"anyOf": true, "oneOf": true, "allOf": true, "prefixItems": true}
)

// strip returns a copy of the schema node without annotations, and when
// minimal, with only the keywords in minimalKeep. It walks only schema
// positions, so a property named "description" is kept.
func strip(node any, minimal bool) any {
	m, ok := node.(map[string]any)
	if !ok {
		return node // true/false schemas, or malformed nodes left as they are
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if annotations[k] {
			continue
		}
		if minimal && !minimalKeep[k] {
			continue
		}
		switch {
		case schemaMapKeys[k]:
			if sm, ok := v.(map[string]any); ok {
				cp := make(map[string]any, len(sm))
				for name, s := range sm {
					cp[name] = strip(s, minimal)
				}
				v = cp
			}
		case schemaArrKeys[k] || (k == "items" && isArray(v)):
			if arr, ok := v.([]any); ok {
				cp := make([]any, len(arr))
				for i, s := range arr {
					cp[i] = strip(s, minimal)
				}
				v = cp
			}
		case k == "additionalProperties" && minimal:
			// A boolean additionalProperties is a constraint; a schema
			// value is the type of a map's values, which is shape.
			if _, isBool := v.(bool); isBool {
				continue
			}
			v = strip(v, minimal)
		case schemaKeys[k]:
			v = strip(v, minimal)
		case k == "dependencies":
			if dm, ok := v.(map[string]any); ok {
				cp := make(map[string]any, len(dm))
				for name, s := range dm {
					cp[name] = strip(s, minimal) // string arrays pass through
				}
				v = cp
			}
		}
		out[k] = v
	}
	return out
}

func isArray(v any) bool { _, ok := v.([]any); return ok }

// usesDraft7Only reports whether a schema that declares draft-07 uses a
// keyword form that parses differently without the declaration (draft
// 2020-12 is the default): items as an array, additionalItems, dependencies.
func usesDraft7Only(root any) bool {
	m, ok := root.(map[string]any)
	if !ok {
		return false
	}
	s, _ := m["$schema"].(string)
	if !strings.Contains(s, "draft-07") && !strings.Contains(s, "draft-06") && !strings.Contains(s, "draft-04") {
		return false
	}
	var walk func(any) bool
	walk = func(n any) bool {
		switch n := n.(type) {
		case map[string]any:
			if isArray(n["items"]) || n["additionalItems"] != nil || n["dependencies"] != nil {
				return true
			}
			for _, v := range n {
				if walk(v) {
					return true
				}
			}
		case []any:
			for _, v := range n {
				if walk(v) {
					return true
				}
			}
		}
		return false
	}
	return walk(root)
}

// sweepLocked drops the cache entries not used since the last sweep, or
// doubles the bound when all were. t.mu must be held.
func (t *Tokenizer) sweepLocked() {
	n := len(t.cache)
	for h, c := range t.cache {
		if !c.used {
			delete(t.cache, h)
		}
		c.used = false
	}
	if len(t.cache) > n/2 {
		t.cacheMax *= 2
	}
}

// jsonKind names the kind of a decoded JSON value for errors.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number:
		return "number"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
