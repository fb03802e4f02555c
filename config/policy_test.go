package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/config"
)

func TestLoadPolicy(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.json")
	src := `{
  // who sees what
  "$schema": "ignored",
  "rules": [
    {"teams": ["platform"], "allow": ["*"]},
    {"users": ["alice", "bob"], "teams": ["data"], "allow": ["postgres", "math__*"], "deny": ["postgres__drop_*"],},
    {"users": ["*"], "deny": ["admin"]},
  ],
  "anonymous": {"allow": ["docs"]}
}`
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := config.LoadPolicy(file)
	if err != nil {
		t.Fatal(err)
	}
	want := &config.Policy{
		Rules: []config.PolicyRule{
			{Teams: []string{"platform"}, Allow: []string{"*"}, At: file + ":5:5"},
			{Users: []string{"alice", "bob"}, Teams: []string{"data"}, Allow: []string{"postgres", "math__*"}, Deny: []string{"postgres__drop_*"}, At: file + ":6:5"},
			{Users: []string{"*"}, Deny: []string{"admin"}, At: file + ":7:5"},
		},
		Anonymous: &config.PolicyRule{Allow: []string{"docs"}, At: file + ":9:16"},
	}
	if diff := cmp.Diff(want, pol); diff != "" {
		t.Errorf("LoadPolicy (-want +got):\n%s", diff)
	}
}

// TestPolicyErrors: every mistake is an error naming file:line:col and
// what is wrong.
func TestPolicyErrors(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"unknown top-level key": {`{"rules": [], "rulez": []}`, `p.json:1:15: unknown field "rulez"`},
		"unknown rule key":      {"{\"rules\": [\n  {\"teams\": [\"a\"], \"alow\": [\"x\"]}]}", `p.json:2:20: rule 1: unknown field "alow"`},
		"empty glob":            {"{\"rules\": [\n {\"users\": [\"a\"],\n  \"allow\": [\"\"]}]}", `p.json:3:13: rule 1: field "allow": empty pattern glob`},
		"blank user":            {`{"rules": [{"users": [" "], "allow": ["x"]}]}`, `p.json:1:23: rule 1: field "users": empty user glob`},
		"bad glob":              {`{"rules": [{"users": ["a"], "deny": ["x["]}]}`, `p.json:1:38: rule 1: field "deny": pattern glob "x["`},
		"matches nobody":        {"{\"rules\": [\n\n  {\"allow\": [\"x\"]}]}", `p.json:3:3: rule 1: names no "users" and no "teams": it would match nobody`},
		"anonymous with users":  {`{"anonymous": {"users": ["a"]}}`, `p.json:1:16: field "anonymous": the anonymous rule is for callers without an identity`},
		"not a list":            {`{"rules": [{"users": "a"}]}`, `p.json:1:22: rule 1: field "users": want an array of strings, got string`},
		"rules not an array":    {`{"rules": {}}`, `p.json:1:11: field "rules": want an array of rules, got object`},
		"duplicate key":         {"{\"rules\": [],\n \"rules\": []}", `p.json:2:2: duplicate key "rules" (first on line 1)`},
		"syntax":                {"{\"rules\": [\n  {\"users\": [\"a\"] \"allow\": []}]}", `p.json:2:19: invalid character`},
		"unterminated comment":  {"{/* \"rules\": []}", `p.json:1:2: `},
		"not an object":         {`[]`, `p.json:1:1: want a policy object with "rules", got array`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.ParsePolicy("p.json", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, config.ErrInvalid) {
				t.Errorf("ParsePolicy(%s):\n got %v\nwant an ErrInvalid containing %q", tc.src, err, tc.want)
			}
		})
	}
}

func TestPolicyWarnings(t *testing.T) {
	pol, err := config.ParsePolicy("p.json", []byte("{\"rules\": [\n  {\"users\": [\"a\"]}]}"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`p.json:2:3: rule 1: allows and denies nothing ("allow" and "deny" are empty or absent)`}
	if diff := cmp.Diff(want, pol.Warnings); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
	pol, err = config.ParsePolicy("p.json", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Warnings) != 1 || !strings.Contains(pol.Warnings[0], "p.json:1:1: no rules and no anonymous") {
		t.Errorf("Warnings of {} = %q", pol.Warnings)
	}
}

// TestPolicyDocExample: the example of docs/serve.md loads, without
// warnings.
func TestPolicyDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "## Team gateway: policy")
	_, block, ok2 := strings.Cut(sec, "```jsonc\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`docs/serve.md has no jsonc block under "## Team gateway: policy"`)
	}
	pol, err := config.ParsePolicy("serve.md", []byte(block))
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Warnings) > 0 || len(pol.Rules) != 4 || pol.Anonymous == nil {
		t.Errorf("the example: %d rules, anonymous %v, warnings %q", len(pol.Rules), pol.Anonymous, pol.Warnings)
	}
}
