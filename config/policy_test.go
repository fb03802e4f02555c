package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
    {"users": ["*"], "deny": ["admin"], "limits": [
      {"calls": 60, "per": "1m", "burst": 10, "tools": ["github__*"], "by": ["user", "tool"]},
      {"name": "searches", "searches": 120, "per": "1h"},
    ]},
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
			{Users: []string{"*"}, Deny: []string{"admin"}, At: file + ":7:5", Limits: []config.PolicyLimit{
				{Calls: 60, Per: time.Minute, Burst: 10, Tools: []string{"github__*"}, By: []string{"user", "tool"}, At: file + ":8:7"},
				{Name: "searches", Searches: 120, Per: time.Hour, At: file + ":9:7"},
			}},
		},
		Anonymous: &config.PolicyRule{Allow: []string{"docs"}, At: file + ":12:16"},
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
		"limits not an array":   {`{"rules": [{"users": ["a"], "limits": {}}]}`, `p.json:1:39: rule 1: field "limits": want an array of limits, got object`},
		"limit not an object":   {`{"rules": [{"users": ["a"], "limits": [1]}]}`, `p.json:1:40: rule 1: limit 1: want an object with "calls" or "searches"`},
		"unknown limit key":     {"{\"rules\": [{\"users\": [\"a\"], \"limits\": [\n  {\"calls\": 1, \"per\": \"1m\", \"brust\": 2}]}]}", `p.json:2:29: rule 1: limit 1: unknown field "brust"`},
		"calls not a number":    {`{"rules": [{"users": ["a"], "limits": [{"calls": "60", "per": "1m"}]}]}`, `p.json:1:50: rule 1: limit 1: field "calls": want a positive whole number`},
		"calls zero":            {`{"rules": [{"users": ["a"], "limits": [{"calls": 0, "per": "1m"}]}]}`, `rule 1: limit 1: field "calls": want a positive whole number`},
		"calls fraction":        {`{"rules": [{"users": ["a"], "limits": [{"calls": 1.5, "per": "1m"}]}]}`, `field "calls": want a positive whole number`},
		"burst negative":        {`{"rules": [{"users": ["a"], "limits": [{"calls": 1, "per": "1m", "burst": -1}]}]}`, `field "burst": want a non-negative whole number`},
		"bad per":               {`{"rules": [{"users": ["a"], "limits": [{"calls": 1, "per": "a minute"}]}]}`, `p.json:1:60: rule 1: limit 1: field "per": want a positive duration`},
		"no per":                {"{\"rules\": [{\"users\": [\"a\"], \"limits\": [\n {\"calls\": 1}]}]}", `p.json:2:2: rule 1: limit 1: no "per"`},
		"calls and searches":    {`{"rules": [{"users": ["a"], "limits": [{"calls": 1, "searches": 1, "per": "1m"}]}]}`, `p.json:1:40: rule 1: limit 1: a limit has exactly one of "calls" and "searches"`},
		"neither":               {`{"rules": [{"users": ["a"], "limits": [{"per": "1m"}]}]}`, `rule 1: limit 1: a limit has exactly one of "calls" and "searches"`},
		"tools of searches":     {`{"rules": [{"users": ["a"], "limits": [{"searches": 1, "per": "1m", "tools": ["x"]}]}]}`, `rule 1: limit 1: "tools" is for a limit of "calls"`},
		"bad tools glob":        {`{"rules": [{"users": ["a"], "limits": [{"calls": 1, "per": "1m", "tools": ["x["]}]}]}`, `p.json:1:75: rule 1: limit 1: "tools": pattern glob "x["`},
		"unknown by":            {`{"rules": [{"users": ["a"], "limits": [{"calls": 1, "per": "1m", "by": ["ip"]}]}]}`, `p.json:1:72: rule 1: limit 1: "by": unknown key "ip"`},
		"by tool of searches":   {`{"rules": [{"users": ["a"], "limits": [{"searches": 1, "per": "1m", "by": ["tool"]}]}]}`, `"by": "tool" is for a limit of "calls"`},
		"by twice":              {`{"rules": [{"users": ["a"], "limits": [{"calls": 1, "per": "1m", "by": ["user", "user"]}]}]}`, `"by": "user" is named twice`},
		"anonymous limit":       {`{"anonymous": {"limits": [{"calls": 1}]}}`, `p.json:1:27: field "anonymous": limit 1: no "per"`},
		"duplicate name": {"{\"rules\": [{\"users\": [\"a\"], \"limits\": [{\"name\": \"x\", \"calls\": 1, \"per\": \"1m\"}]},\n {\"users\": [\"b\"], \"limits\": [{\"name\": \"x\", \"searches\": 1, \"per\": \"1m\"}]}]}",
			`p.json:2:30: limit "x": the name is the limit's at p.json:1:40 too`},
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

// TestRateLimitDocExample: the example of docs/serve.md's "Rate limits"
// loads, without warnings, as it reads.
func TestRateLimitDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "### Rate limits")
	_, block, ok2 := strings.Cut(sec, "```jsonc\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`docs/serve.md has no jsonc block under "### Rate limits"`)
	}
	pol, err := config.ParsePolicy("serve.md", []byte(block))
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Warnings) > 0 || len(pol.Rules) != 1 || len(pol.Rules[0].Limits) != 4 || pol.Anonymous == nil || len(pol.Anonymous.Limits) != 1 {
		t.Fatalf("the example: %+v, warnings %q", pol, pol.Warnings)
	}
	l := pol.Rules[0].Limits[1]
	if l.Name != "github-team" || l.Calls != 100 || l.Per != time.Hour || l.Tools[0] != "github" || l.By[0] != "team" {
		t.Errorf("the example's second limit: %+v", l)
	}
}
