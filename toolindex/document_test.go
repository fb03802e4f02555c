package toolindex_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

func TestDocumentFields(t *testing.T) {
	tests := []struct {
		name string
		tool tool.Tool
		want toolindex.Fields
	}{
		{
			name: "name only",
			tool: tool.Tool{Name: "getWeatherForecast"},
			want: toolindex.Fields{Name: "get weather forecast"},
		},
		{
			name: "namespaced with title and server",
			tool: tool.Tool{
				Name: "github__create_issue", OriginalName: "createIssue", Server: "github",
				Title: "Create issue", Description: "  Open a new issue.  ",
			},
			want: toolindex.Fields{
				Name:        "github create issue. Create issue",
				Description: "Open a new issue.",
				Server:      "github",
			},
		},
		{
			name: "original name adds words",
			tool: tool.Tool{Name: "s1__t", OriginalName: "math.factorial"},
			want: toolindex.Fields{Name: "s 1 t math factorial"},
		},
		{
			name: "params sorted with enum, nested and items",
			tool: tool.Tool{
				Name: "get_weather",
				InputSchema: json.RawMessage(`{"type":"object","properties":{
					"units":{"type":"string","description":"Temperature units","enum":["celsius","fahrenheit"]},
					"city":{"type":"string","description":"The city   name."},
					"location":{"type":"object","properties":{"lat":{"type":"number","title":"Latitude"}}},
					"tags":{"type":"array","items":{"type":"string","enum":["a",1,true]}}}}`),
			},
			want: toolindex.Fields{
				Name:   "get weather",
				Params: "city: The city name. location: lat: Latitude. tags: one of: a, 1, true. units: Temperature units. one of: celsius, fahrenheit.",
			},
		},
		{
			name: "anyOf",
			tool: tool.Tool{Name: "x", InputSchema: json.RawMessage(`{"anyOf":[{"properties":{"fileURL":{"description":"URL?"}}}]}`)},
			want: toolindex.Fields{Name: "x", Params: "file url: URL?"},
		},
		{
			name: "invalid schema ignored",
			tool: tool.Tool{Name: "x", InputSchema: json.RawMessage(`[1,2`)},
			want: toolindex.Fields{Name: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, toolindex.DocumentFields(tt.tool)); diff != "" {
				t.Errorf("DocumentFields mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDocumentFieldsBounded(t *testing.T) {
	// 500 parameters, each nested 10 deep: the text stays bounded.
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 500 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":`, i)
		for range 10 {
			b.WriteString(`{"description":"some words about this parameter","properties":{"inner":`)
		}
		b.WriteString(`{}`)
		for range 10 {
			b.WriteString(`}}`)
		}
	}
	b.WriteString(`}}`)
	raw := json.RawMessage(b.String())
	if !json.Valid(raw) {
		t.Fatal("test schema is not valid JSON")
	}
	f := toolindex.DocumentFields(tool.Tool{Name: "big", InputSchema: raw})
	if len(f.Params) == 0 || len(f.Params) > 4200 {
		t.Errorf("len(Params) = %d, want 1..4200", len(f.Params))
	}
	if n := strings.Count(f.Params, ":"); n > 64 {
		t.Errorf("Params describes %d parameters, want at most 64", n)
	}
}

func ExampleDocument() {
	tool := tool.Tool{
		Name:        "weather__getForecast",
		Server:      "weather",
		Description: "Get the weather forecast for a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"city":{"type":"string","description":"City name"},
			"units":{"type":"string","enum":["celsius","fahrenheit"]}}}`),
	}
	fmt.Println(toolindex.Document(tool))
	// Output:
	// weather get forecast
	//
	// Get the weather forecast for a city.
	//
	// city: City name. units: one of: celsius, fahrenheit.
	//
	// weather
}
