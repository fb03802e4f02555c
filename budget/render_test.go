package budget_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
)

const catalogPath = "../../shared/mcp/catalog.jsonl"

func exampleTool() tool.Tool {
	return tool.Tool{
		Name:        "get_weather",
		Description: "Get the current weather for a city. Returns temperature and conditions.\nUse metric units unless told otherwise.",
		InputSchema: json.RawMessage(`{
			"$schema": "http://json-schema.org/draft-07/schema#",
			"type": "object",
			"title": "Weather input",
			"properties": {
				"city": {"type": "string", "description": "City name, e.g. Paris", "examples": ["Paris"]},
				"units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric", "description": "Unit system"},
				"description": {"type": "boolean", "description": "A parameter that happens to be called description"},
				"days": {"type": "array", "items": {"type": "integer", "minimum": 1, "description": "day offset"}, "maxItems": 7},
				"location": {"anyOf": [{"type": "string", "format": "uri"}, {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat", "lon"]}]}
			},
			"required": ["city"],
			"additionalProperties": false
		}`),
	}.WithHash()
}

// TestRenderGolden pins each tier of one tool: the JSON sent and its count.
// The counts are tiktoken's for the bytes JSON returns in FormatChat (checked
// against TestGoldenTokens' ids, so a count changes only if the rendering
// does).
func TestRenderGolden(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	tool := exampleTool()
	tests := []struct {
		tier budget.Tier
		json string
	}{
		{budget.TierFull, `{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city. Returns temperature and conditions.\nUse metric units unless told otherwise.","parameters":{"$schema":"http://json-schema.org/draft-07/schema#","additionalProperties":false,"properties":{"city":{"description":"City name, e.g. Paris","examples":["Paris"],"type":"string"},"days":{"items":{"description":"day offset","minimum":1,"type":"integer"},"maxItems":7,"type":"array"},"description":{"description":"A parameter that happens to be called description","type":"boolean"},"location":{"anyOf":[{"format":"uri","type":"string"},{"properties":{"lat":{"type":"number"},"lon":{"type":"number"}},"required":["lat","lon"],"type":"object"}]},"units":{"default":"metric","description":"Unit system","enum":["metric","imperial"],"type":"string"}},"required":["city"],"title":"Weather input","type":"object"}}}`},
		{budget.TierNoParamDocs, `{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city. Returns temperature and conditions.\nUse metric units unless told otherwise.","parameters":{"additionalProperties":false,"properties":{"city":{"type":"string"},"days":{"items":{"minimum":1,"type":"integer"},"maxItems":7,"type":"array"},"description":{"type":"boolean"},"location":{"anyOf":[{"format":"uri","type":"string"},{"properties":{"lat":{"type":"number"},"lon":{"type":"number"}},"required":["lat","lon"],"type":"object"}]},"units":{"enum":["metric","imperial"],"type":"string"}},"required":["city"],"type":"object"}}}`},
		{budget.TierShortDescription, `{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city.","parameters":{"additionalProperties":false,"properties":{"city":{"type":"string"},"days":{"items":{"minimum":1,"type":"integer"},"maxItems":7,"type":"array"},"description":{"type":"boolean"},"location":{"anyOf":[{"format":"uri","type":"string"},{"properties":{"lat":{"type":"number"},"lon":{"type":"number"}},"required":["lat","lon"],"type":"object"}]},"units":{"enum":["metric","imperial"],"type":"string"}},"required":["city"],"type":"object"}}}`},
		{budget.TierMinimal, `{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city.","parameters":{"properties":{"city":{"type":"string"},"days":{"items":{"type":"integer"},"type":"array"},"description":{"type":"boolean"},"location":{"anyOf":[{"type":"string"},{"properties":{"lat":{"type":"number"},"lon":{"type":"number"}},"required":["lat","lon"],"type":"object"}]},"units":{"enum":["metric","imperial"],"type":"string"}},"required":["city"],"type":"object"}}}`},
	}
	golden := map[budget.Tier]int{budget.TierFull: 209, budget.TierNoParamDocs: 149, budget.TierShortDescription: 136, budget.TierMinimal: 118}
	prev := 1 << 30
	for _, tt := range tests {
		t.Run(tt.tier.String(), func(t *testing.T) {
			r, err := tok.CountTool(tool, tt.tier)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.json, string(r.JSON(tool.Name, budget.FormatChat))); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
			if want := tok.Count(tt.json); r.Tokens != want {
				t.Errorf("Tokens = %d, Count(JSON) = %d", r.Tokens, want)
			}
			if r.Tokens != golden[tt.tier] {
				t.Errorf("Tokens = %d, golden %d", r.Tokens, golden[tt.tier])
			}
			if r.Tokens > prev {
				t.Errorf("tier %v costs %d, more than the tier before (%d)", tt.tier, r.Tokens, prev)
			}
			prev = r.Tokens
		})
	}
}

func TestRenderEdgeCases(t *testing.T) {
	tok := mustTokenizer(t, "cl100k_base")
	tests := []struct {
		name   string
		tool   tool.Tool
		tier   budget.Tier
		desc   string
		params string
	}{
		{"no schema", tool.Tool{Name: "ping"}, budget.TierFull, "", `{"properties":{},"type":"object"}`},
		{"no html escaping", tool.Tool{Name: "cmp", Description: "a < b && c > d", InputSchema: json.RawMessage(`{"type":"object"}`)}, budget.TierFull, "a < b && c > d", `{"type":"object"}`},
		{"abbreviation is not a sentence end", tool.Tool{Name: "x", Description: "Find files, e.g. logs. Then more."}, budget.TierShortDescription, "Find files, e.g. logs.", `{"properties":{},"type":"object"}`},
		{"version number is not a sentence end", tool.Tool{Name: "x", Description: "Uses API v1.2 only! Other text."}, budget.TierShortDescription, "Uses API v1.2 only!", `{"properties":{},"type":"object"}`},
		{"leading blank line", tool.Tool{Name: "x", Description: "\n\n  Does a thing\nand more"}, budget.TierMinimal, "Does a thing", `{"properties":{},"type":"object"}`},
		{"long first sentence is capped", tool.Tool{Name: "x", Description: strings.Repeat("word ", 60)}, budget.TierMinimal, strings.TrimSpace(strings.Repeat("word ", 23)) + "…", `{"properties":{},"type":"object"}`},
		{"draft-07 items array keeps $schema", tool.Tool{Name: "x", InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"type":"array","items":[{"type":"string","description":"d"}]}}}`)}, budget.TierMinimal, "",
			`{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"p":{"items":[{"type":"string"}],"type":"array"}},"type":"object"}`},
		{"refs keep their defs", tool.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"object","description":"an A","properties":{"n":{"type":"integer","maximum":3}},"additionalProperties":{"type":"string","pattern":"x"}}}}`)}, budget.TierMinimal, "",
			`{"$defs":{"A":{"additionalProperties":{"type":"string"},"properties":{"n":{"type":"integer"}},"type":"object"}},"properties":{"a":{"$ref":"#/$defs/A"}},"type":"object"}`},
		{"big numbers stay exact", tool.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","enum":[12345678901234567890, 1.50]}}}`)}, budget.TierMinimal, "",
			`{"properties":{"n":{"enum":[12345678901234567890,1.50],"type":"integer"}},"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tok.CountTool(tt.tool, tt.tier)
			if err != nil {
				t.Fatal(err)
			}
			if r.Description != tt.desc {
				t.Errorf("Description = %q, want %q", r.Description, tt.desc)
			}
			if string(r.Parameters) != tt.params {
				t.Errorf("Parameters = %s\nwant         %s", r.Parameters, tt.params)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	for _, schema := range []string{`{"type":`, `[1,2]`, `"string"`} {
		_, err := tok.CountTool(tool.Tool{Name: "broken", InputSchema: json.RawMessage(schema)}, budget.TierFull)
		if !errors.Is(err, budget.ErrBadTool) || !strings.Contains(err.Error(), `"broken"`) {
			t.Errorf("schema %s: error = %v, want ErrBadTool naming the tool", schema, err)
		}
	}
	if _, err := tok.CountTool(exampleTool(), budget.Tier(9)); !errors.Is(err, budget.ErrBadTool) {
		t.Errorf("tier 9: error = %v, want ErrBadTool", err)
	}
}

// TestRenderFormats: each API's shape carries the tier's description and
// parameters under that API's keys, and nothing else.
func TestRenderFormats(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	r, err := tok.CountTool(tool.Tool{Name: "read_file", Description: "Read a <file>.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}, budget.TierFull)
	if err != nil {
		t.Fatal(err)
	}
	params := `{"properties":{"path":{"type":"string"}},"type":"object"}`
	tests := []struct {
		format budget.Format
		want   string
	}{
		{budget.FormatChat, `{"type":"function","function":{"name":"read_file","description":"Read a <file>.","parameters":` + params + `}}`},
		{budget.FormatResponses, `{"type":"function","name":"read_file","description":"Read a <file>.","parameters":` + params + `,"strict":false}`},
		{budget.FormatAnthropic, `{"name":"read_file","description":"Read a <file>.","input_schema":` + params + `}`},
		{budget.FormatMCP, `{"name":"read_file","description":"Read a <file>.","inputSchema":` + params + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.format.String(), func(t *testing.T) {
			got := r.JSON("read_file", tt.format)
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
			if f, err := budget.ParseFormat(tt.format.String()); err != nil || f != tt.format {
				t.Errorf("ParseFormat(%q) = %v, %v", tt.format, f, err)
			}
		})
	}
	noDesc := r
	noDesc.Description = ""
	if got := string(noDesc.JSON("x", budget.FormatAnthropic)); got != `{"name":"x","input_schema":`+params+`}` {
		t.Errorf("without a description: %s", got)
	}
	if _, err := budget.ParseFormat("gemini"); err == nil {
		t.Error("ParseFormat(gemini) succeeded")
	}
}

// TestTierText: a tier is written by name (JSON, logs) and read back; an
// unknown name is an error naming it.
func TestTierText(t *testing.T) {
	for tier := budget.TierFull; tier < budget.NumTiers; tier++ {
		b, err := json.Marshal(tier)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"` + tier.String() + `"`; string(b) != want {
			t.Errorf("json.Marshal(%d) = %s, want %s", int(tier), b, want)
		}
		var back budget.Tier
		if err := json.Unmarshal(b, &back); err != nil || back != tier {
			t.Errorf("read back %s: %v, %v", b, back, err)
		}
	}
	var tier budget.Tier
	if err := json.Unmarshal([]byte(`"tiny"`), &tier); err == nil || !strings.Contains(err.Error(), `"tiny"`) {
		t.Errorf("unknown tier: err %v, want one naming it", err)
	}
	if _, err := json.Marshal(budget.Tier(9)); err == nil {
		t.Error("tier 9 marshalled, want an error")
	}
}
