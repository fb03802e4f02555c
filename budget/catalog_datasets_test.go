//go:build datasets

package budget_test

// Tests on the real 73-server MCP catalog, which lives outside the
// repository (docs/datasets.md): go test -tags datasets ./budget/ (.ci/run
// runs it when the catalog is beside the checkout).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
)

// catalogTool is one line of the MCP catalog.
type catalogTool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func loadCatalog(t testing.TB) []catalogTool {
	t.Helper()
	f, err := os.Open(catalogPath)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s not found: the 73-server MCP catalog lives beside the checkout (docs/datasets.md says where it comes from)", catalogPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tools []catalogTool
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for line := 1; sc.Scan(); line++ {
		var c catalogTool
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s:%d: %v", catalogPath, line, err)
		}
		tools = append(tools, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tools
}

// TestTiersStayValidSchemas resolves every tier of every tool of the real
// MCP catalog with jsonschema-go (the schema library of the go-sdk), and
// checks that compression kept every type, required, enum and const value of
// the value's shape (properties, items, anyOf/oneOf/allOf, $defs).
func TestTiersStayValidSchemas(t *testing.T) {
	catalog := loadCatalog(t)
	// Under -race (about 5x slower) or -short, check a fixed 1-in-5 sample;
	// a plain `go test` checks every tool.
	stride := 1
	if raceEnabled || testing.Short() {
		stride = 5
		t.Logf("-race or -short: checking every %dth tool", stride)
	}
	invalidFull, checked := 0, 0
	for i, c := range catalog {
		if i%stride != 0 {
			continue
		}
		checked++
		tool := tool.Tool{Name: c.Server + "_" + c.Name, Description: c.Description, InputSchema: c.InputSchema}
		_, full, err := budget.Compress(tool, budget.TierFull)
		if err != nil {
			t.Errorf("%s: %v", tool.Name, err)
			continue
		}
		want := shape(t, full)
		var prev []byte
		// Every tier with a schema (TierName sends none: the parameters
		// are a search_tools step away, by design).
		for tier := budget.TierNoParamDocs; tier < budget.TierName; tier++ {
			desc, params, err := budget.Compress(tool, tier)
			if err != nil {
				t.Errorf("%s at %v: %v", tool.Name, tier, err)
				continue
			}
			if tier >= budget.TierShortDescription && strings.ContainsAny(desc, "\r\n") {
				t.Errorf("%s at %v: description has a line break: %q", tool.Name, tier, desc)
			}
			if bytes.Equal(params, prev) {
				continue // same schema as the tier before (only the description changed)
			}
			prev = params
			if got := shape(t, params); !maps.Equal(want, got) {
				t.Errorf("%s at %v lost type/required/enum (-full +tier):\n%s", tool.Name, tier, cmp.Diff(want, got))
			}
			if err := resolveErr(params); err != nil {
				if fullErr := resolveErr(full); fullErr != nil {
					// The server's own schema; nothing to keep valid.
					invalidFull++
					t.Logf("%s: the server's schema does not resolve: %v", tool.Name, fullErr)
					break
				}
				t.Errorf("%s at %v does not resolve: %v\n%s", tool.Name, tier, err, params)
			}
		}
	}
	t.Logf("%d of %d tools checked, %d with a server schema that does not resolve", checked, len(catalog), invalidFull)
	if checked == 0 || invalidFull > checked/100 {
		t.Errorf("%d of %d server schemas do not resolve: the check is not testing much", invalidFull, checked)
	}
}

func resolveErr(params []byte) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(params, &s); err != nil {
		return fmt.Errorf("unmarshal: %w", err)
	}
	_, err := s.Resolve(nil)
	return err
}

// shape collects, by JSON path, every "type", "required", "enum" and
// "const" value of the schemas that make up a value's shape: what every
// tier must keep.
func shape(t *testing.T, params []byte) map[string]string {
	var root any
	if err := json.Unmarshal(params, &root); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, c := range m {
			p := path + "/" + k
			switch k {
			case "type", "required", "enum", "const":
				b, _ := json.Marshal(c)
				out[p] = string(b)
			case "properties", "$defs", "definitions":
				if cm, ok := c.(map[string]any); ok {
					for name, s := range cm {
						walk(p+"/"+name, s)
					}
				}
			case "items", "additionalProperties":
				walk(p, c)
				fallthrough
			case "anyOf", "oneOf", "allOf", "prefixItems":
				if arr, ok := c.([]any); ok {
					for i, s := range arr {
						walk(fmt.Sprintf("%s/%d", p, i), s)
					}
				}
			}
		}
	}
	walk("", root)
	return out
}
