package config

import (
	"fmt"
	"path"
	"strings"
)

// A Policy says which servers and tools each user or team of a team
// gateway (toolsift serve --policy) may see and call. It is data, read
// from a JSON or JSONC file by [LoadPolicy] (docs/serve.md, "Team gateway:
// policy"); package gateway enforces it.
//
// A caller sees a tool when a pattern of Allow of a rule that matches the
// caller matches it and no pattern of Deny of such a rule does: deny wins
// over allow, and a caller no rule matches sees nothing. A caller without
// an identity (stdio, or HTTP with a shared token) gets Anonymous.
//
// Globs are path.Match's ("*" any run of characters, "?" one, "[a-z]" a
// class, a backslash escapes), but "*" and "?" match "/" too: "org/*" and
// "*" both match the team "org/team". A pattern is a glob over either a
// server's name as the config names it ("github", "*") or a qualified
// tool name ("github__create_issue", "github__delete_*"): a pattern with
// "__" is a tool pattern, one without a server pattern. A server pattern covers the
// server's tools and its resources, resource templates, prompts and
// completions; a tool pattern covers tools only (a server's resources and
// prompts follow its server patterns).
type Policy struct {
	// Rules are matched against the caller: every rule that matches adds
	// its Allow and Deny patterns.
	Rules []PolicyRule
	// Anonymous is what a caller without an identity gets; nil means
	// nothing (only search_tools and call_tool, which find nothing).
	Anonymous *PolicyRule
	// Warnings lists what is probably a mistake but not an error, each as
	// "file:line:col: message". Package gateway adds the patterns that
	// name no server of the config it serves.
	Warnings []string
}

// PolicyRule is one rule of a Policy.
type PolicyRule struct {
	// Users and Teams are globs (see Policy) of the user names and team
	// names the rule applies to: a caller whose user matches one of Users,
	// or one of whose teams matches one of Teams. "*" is every user (or
	// every member of a team), never a caller without an identity.
	Users, Teams []string
	// Allow and Deny are server or tool patterns (see Policy).
	Allow, Deny []string
	// At is where the rule is written, "file:line:col" (empty for a rule
	// made in code): warnings about it name it.
	At string
}

// LoadPolicy reads a policy file (JSON, or JSONC with comments and
// trailing commas):
//
//	{
//	  "rules": [
//	    {"teams": ["platform"], "allow": ["*"]},
//	    {"users": ["alice"], "allow": ["postgres"], "deny": ["postgres__drop_*"]}
//	  ],
//	  "anonymous": {"allow": ["docs"]}
//	}
//
// An unknown or duplicate key, a value of the wrong kind, an empty or
// malformed glob, or a rule that names no user and no team (it would
// match nobody) is an error wrapping [ErrInvalid] that names file:line:col;
// a rule that allows and denies nothing is a warning (Policy.Warnings).
func LoadPolicy(file string) (*Policy, error) {
	data, err := readFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: policy: %w", ErrInvalid, err)
	}
	return ParsePolicy(file, data)
}

// ParsePolicy is LoadPolicy of data read from file (file names it in
// errors and warnings).
func ParsePolicy(file string, data []byte) (*Policy, error) {
	p := &parser{file: file}
	root, err := p.object(data, `a policy object with "rules"`)
	if err != nil {
		return nil, err
	}
	pol := &Policy{}
	for _, m := range root.members {
		switch m.key {
		case "rules":
			if m.val.kind != jArray {
				return nil, p.errorf(m.val.off, `field "rules"`, "want an array of rules, got %s", m.val.kind)
			}
			for i, e := range m.val.elems {
				r, err := p.policyRule(e, fmt.Sprintf("rule %d", i+1), false)
				if err != nil {
					return nil, err
				}
				pol.Rules = append(pol.Rules, r)
			}
		case "anonymous":
			r, err := p.policyRule(m.val, `field "anonymous"`, true)
			if err != nil {
				return nil, err
			}
			pol.Anonymous = &r
		case "$schema":
		default:
			return nil, p.errorf(m.off, "", `unknown field %q (a policy has "rules" and "anonymous")`, m.key)
		}
	}
	if len(pol.Rules) == 0 && pol.Anonymous == nil {
		p.warn(root.off, "", "no rules and no anonymous: every caller sees nothing but search_tools and call_tool")
	}
	for _, w := range p.warnings {
		pol.Warnings = append(pol.Warnings, w.msg)
	}
	return pol, nil
}

// policyRule reads one rule; anon: the anonymous rule, which names no
// users or teams.
func (p *parser) policyRule(v *jval, ctx string, anon bool) (PolicyRule, error) {
	r := PolicyRule{At: p.at(v.off)}
	if v.kind != jObject {
		return r, p.errorf(v.off, ctx, `want an object with "allow" and/or "deny", got %s`, v.kind)
	}
	if err := p.unique(v, ctx, "key"); err != nil {
		return r, err
	}
	for _, m := range v.members {
		fctx := fmt.Sprintf("%s: field %q", ctx, m.key)
		var dst *[]string
		var noun string
		switch m.key {
		case "users", "teams":
			if anon {
				return r, p.errorf(m.off, ctx, "the anonymous rule is for callers without an identity: it names no %s", m.key)
			}
			dst, noun = &r.Users, "user"
			if m.key == "teams" {
				dst, noun = &r.Teams, "team"
			}
		case "allow", "deny":
			dst, noun = &r.Allow, "pattern"
			if m.key == "deny" {
				dst = &r.Deny
			}
		default:
			keys := `"users", "teams", "allow" and "deny"`
			if anon {
				keys = `"allow" and "deny"`
			}
			return r, p.errorf(m.off, ctx, "unknown field %q (a rule has %s)", m.key, keys)
		}
		globs, err := p.strings(m.val, fctx)
		if err != nil {
			return r, err
		}
		for i, g := range globs {
			at := m.val.elems[i].off
			if strings.TrimSpace(g) == "" {
				return r, p.errorf(at, fctx, "empty %s glob", noun)
			}
			if _, err := path.Match(g, ""); err != nil {
				return r, p.errorf(at, fctx, "%s glob %q: %v", noun, g, err)
			}
		}
		*dst = append(*dst, globs...)
	}
	if !anon && len(r.Users) == 0 && len(r.Teams) == 0 {
		return r, p.errorf(v.off, ctx, `names no "users" and no "teams": it would match nobody (every signed-in user is "users": ["*"])`)
	}
	if len(r.Allow) == 0 && len(r.Deny) == 0 {
		p.warn(v.off, ctx, `allows and denies nothing ("allow" and "deny" are empty or absent)`)
	}
	return r, nil
}
