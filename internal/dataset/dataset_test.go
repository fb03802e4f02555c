package dataset_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/tool"
)

func TestReadTools(t *testing.T) {
	in := `{"name": "get_weather", "description": "Weather now.", "inputSchema": {"type":"object","properties":{"city":{"type":"string"}}}, "server": "wx"}

{"name": "math.factorial", "description": "n!", "original_name": "factorial"}
`
	got, err := dataset.ReadTools(strings.NewReader(in), "tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d tools, want 2", len(got))
	}
	want := tool.Tool{
		Name: "get_weather", Server: "wx", OriginalName: "get_weather", Description: "Weather now.",
		InputSchema: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`),
	}
	want.Hash = tool.ContentHash(want)
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("tool 0 (-want +got):\n%s", diff)
	}
	if got[1].OriginalName != "factorial" {
		t.Errorf("OriginalName = %q, want factorial", got[1].OriginalName)
	}
}

func TestReadToolsErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bad json", "{\"name\":\"a\"}\n{oops\n", "t.jsonl:2:"},
		{"no name", "{\"description\":\"x\"}\n", "t.jsonl:1: tool has no name"},
		{"duplicate", "{\"name\":\"a\"}\n\n{\"name\":\"a\"}\n", `t.jsonl:3: tool "a" already defined on line 1`},
		{"bad schema", "{\"name\":\"a\",\"inputSchema\":\"x\"}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dataset.ReadTools(strings.NewReader(tt.in), "t.jsonl")
			if tt.want == "" {
				// A string schema is valid JSON; the reader does not judge
				// JSON Schema semantics.
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, dataset.ErrFormat) {
				t.Fatalf("err = %v, want ErrFormat containing %q", err, tt.want)
			}
		})
	}
}

func TestReadQueries(t *testing.T) {
	in := `{"id":"q1","query":"weather in Paris","gold":["get_weather"]}
{"id":"q2","query":"two steps","gold":["a","b"],"gold_groups":[["a","a2"],["b"]]}
`
	qs, err := dataset.ReadQueries(strings.NewReader(in), "q.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"get_weather"}}, qs[0].Groups()); diff != "" {
		t.Errorf("q1 groups (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"a", "a2"}, {"b"}}, qs[1].Groups()); diff != "" {
		t.Errorf("q2 groups (-want +got):\n%s", diff)
	}

	for in, want := range map[string]string{
		`{"query":"x","gold":["a"]}`:             "q.jsonl:1: query has no id",
		`{"id":"z","gold":["a"]}`:                `q.jsonl:1: query "z" has no text`,
		`{"id":"z","query":"x","gold":[]}`:       `q.jsonl:1: query "z" has no gold tools`,
		"\n" + `{"id":"z","query":"x","gold":1}`: "q.jsonl:2:",
	} {
		_, err := dataset.ReadQueries(strings.NewReader(in), "q.jsonl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadQueries(%q) err = %v, want it to contain %q", in, err, want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := dataset.LoadTools(filepath.Join(t.TempDir(), "nope.jsonl"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}

// TestLoadToolsQualified: names are qualified only when they repeat across
// servers, and then every tool with a server is, keeping its own name;
// a bad line keeps its line number.
func TestLoadToolsQualified(t *testing.T) {
	dir := t.TempDir()
	qualify := func(server, name string) string { return server + "__" + name }
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unique := write("unique.jsonl", `{"server":"a","name":"x"}`+"\n"+`{"server":"b","name":"y"}`+"\n")
	tools, shared, err := dataset.LoadToolsQualified(unique, qualify)
	if err != nil || shared != 0 || tools[0].Name != "x" || tools[1].Name != "y" {
		t.Fatalf("unique names: %v, %d, %v; want them as written", tools, shared, err)
	}
	repeated := write("repeated.jsonl", `{"server":"a","name":"x"}`+"\n"+`{"server":"b","name":"x"}`+"\n"+`{"name":"z"}`+"\n")
	tools, shared, err = dataset.LoadToolsQualified(repeated, qualify)
	if err != nil || shared != 1 {
		t.Fatalf("repeated names: %v, %d, %v", tools, shared, err)
	}
	var got []string
	for _, tl := range tools {
		got = append(got, tl.Name+"/"+tl.OriginalName)
	}
	if want := "a__x/x b__x/x z/z"; strings.Join(got, " ") != want {
		t.Errorf("names %q, want %q", strings.Join(got, " "), want)
	}
	bad := write("bad.jsonl", `{"server":"a","name":"x"}`+"\n"+`{"server":"b","name":"x"}`+"\n"+`{"server":`+"\n")
	if _, _, err := dataset.LoadToolsQualified(bad, qualify); err == nil || !strings.Contains(err.Error(), "bad.jsonl:3") {
		t.Errorf("bad line: %v, want an error naming bad.jsonl:3", err)
	}
}
