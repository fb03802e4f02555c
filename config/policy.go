package config

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
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
	// Limits are the rate limits of the callers the rule matches (see
	// PolicyLimit); every limit of every matching rule applies.
	Limits []PolicyLimit
	// At is where the rule is written, "file:line:col" (empty for a rule
	// made in code): warnings about it name it.
	At string
}

// PolicyLimit is a rate limit of a PolicyRule: a token bucket that holds
// Burst requests and refills at Calls (or Searches) per Per. A request
// that finds its bucket empty is refused, and the refusal says when to
// retry.
type PolicyLimit struct {
	// Name labels the limit in metrics and refusals; empty, it is
	// "rule N limit M" ("anonymous limit M").
	Name string
	// Calls limits tool calls (listed, through call_tool or by name) and
	// Searches limits search_tools; exactly one of them is positive.
	Calls, Searches int
	// Per is the period of Calls or Searches.
	Per time.Duration
	// Burst is the most requests let through at once; 0 means Calls (or
	// Searches): a caller that has been idle for Per may spend a
	// period's worth at once.
	Burst int
	// Tools are server or tool patterns (see Policy) of the calls the
	// limit counts (the tool call_tool calls counts, not call_tool);
	// empty, every call. Only with Calls.
	Tools []string
	// By says who shares a bucket: each distinct combination of the
	// named keys has its own. "user" (the caller's user), "team" (the
	// caller's first team the rule's Teams match; a caller matched by
	// its user alone has its own bucket), "server" and "tool" (the
	// called tool's server and qualified name; only with Calls). Nil
	// means {"user"}; empty (not nil), one bucket for every caller the
	// rule matches.
	By []string
	// At is where the limit is written, "file:line:col" (empty for a
	// limit made in code).
	At string
}

// limitKeys are the keys PolicyLimit.By may name.
var limitKeys = []string{"user", "team", "server", "tool"}

// Check reports what is wrong with l, naming the field at fault, or nil.
func (l PolicyLimit) Check() error {
	switch {
	case l.Calls < 0 || l.Searches < 0:
		return fmt.Errorf(`"calls" and "searches" must not be negative`)
	case (l.Calls > 0) == (l.Searches > 0):
		return fmt.Errorf(`a limit has exactly one of "calls" and "searches", a positive count`)
	case l.Per <= 0:
		return fmt.Errorf(`"per" must be a positive duration ("1m", "1h")`)
	case l.Burst < 0:
		return fmt.Errorf(`"burst" must not be negative`)
	case l.Searches > 0 && len(l.Tools) > 0:
		return fmt.Errorf(`"tools" is for a limit of "calls": a search calls no tool`)
	}
	for i, k := range l.By {
		if !slices.Contains(limitKeys, k) {
			return fmt.Errorf(`"by": unknown key %q (want "user", "team", "server" or "tool")`, k)
		}
		if slices.Contains(l.By[:i], k) {
			return fmt.Errorf(`"by": %q is named twice`, k)
		}
		if l.Searches > 0 && (k == "server" || k == "tool") {
			return fmt.Errorf(`"by": %q is for a limit of "calls": a search calls no tool`, k)
		}
	}
	for _, g := range l.Tools {
		if strings.TrimSpace(g) == "" {
			return fmt.Errorf(`"tools": empty pattern glob`)
		}
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf(`"tools": pattern glob %q: %v`, g, err)
		}
	}
	return nil
}

// LoadPolicy reads a policy file (JSON, or JSONC with comments and
// trailing commas):
//
//	{
//	  "rules": [
//	    {"teams": ["platform"], "allow": ["*"]},
//	    {"users": ["alice"], "allow": ["postgres"], "deny": ["postgres__drop_*"],
//	     "limits": [{"calls": 60, "per": "1m", "burst": 10, "tools": ["postgres"]},
//	                {"searches": 120, "per": "1m"}]}
//	  ],
//	  "anonymous": {"allow": ["docs"]}
//	}
//
// An unknown or duplicate key, a value of the wrong kind, an empty or
// malformed glob, a rule that names no user and no team (it would
// match nobody), or a bad limit (see PolicyLimit; a limit's "per" is a Go
// duration, "30s", "1m", "1h") is an error wrapping [ErrInvalid] that names file:line:col;
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
	named := map[string]string{}
	for _, r := range append(slices.Clone(pol.Rules), *cmpRule(pol.Anonymous)) {
		for _, l := range r.Limits {
			if l.Name == "" {
				continue
			}
			if at, dup := named[l.Name]; dup {
				return nil, fmt.Errorf("%w: %s: limit %q: the name is the limit's at %s too", ErrInvalid, l.At, l.Name, at)
			}
			named[l.Name] = l.At
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

// cmpRule is r, or an empty rule for nil.
func cmpRule(r *PolicyRule) *PolicyRule {
	if r == nil {
		return &PolicyRule{}
	}
	return r
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
		case "limits":
			if m.val.kind != jArray {
				return r, p.errorf(m.val.off, fctx, "want an array of limits, got %s", m.val.kind)
			}
			for i, e := range m.val.elems {
				l, err := p.policyLimit(e, fmt.Sprintf("%s: limit %d", ctx, i+1))
				if err != nil {
					return r, err
				}
				r.Limits = append(r.Limits, l)
			}
			continue
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
			keys := `"users", "teams", "allow", "deny" and "limits"`
			if anon {
				keys = `"allow", "deny" and "limits"`
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
	if len(r.Allow) == 0 && len(r.Deny) == 0 && len(r.Limits) == 0 {
		p.warn(v.off, ctx, `allows and denies nothing ("allow" and "deny" are empty or absent)`)
	}
	return r, nil
}

// policyLimit reads one limit of a rule.
func (p *parser) policyLimit(v *jval, ctx string) (PolicyLimit, error) {
	l := PolicyLimit{At: p.at(v.off)}
	if v.kind != jObject {
		return l, p.errorf(v.off, ctx, `want an object with "calls" or "searches" and "per", got %s`, v.kind)
	}
	if err := p.unique(v, ctx, "key"); err != nil {
		return l, err
	}
	var perOff = v.off
	for _, m := range v.members {
		fctx := fmt.Sprintf("%s: field %q", ctx, m.key)
		switch m.key {
		case "calls", "searches", "burst":
			n, err := strconv.Atoi(m.val.str)
			if m.val.kind != jNumber || err != nil || n < 0 || (n == 0 && m.key != "burst") {
				least := "a positive"
				if m.key == "burst" {
					least = "a non-negative"
				}
				return l, p.errorf(m.val.off, fctx, "want %s whole number", least)
			}
			switch m.key {
			case "calls":
				l.Calls = n
			case "searches":
				l.Searches = n
			default:
				l.Burst = n
			}
		case "per":
			d, err := time.ParseDuration(m.val.str)
			if m.val.kind != jString || err != nil || d <= 0 {
				return l, p.errorf(m.val.off, fctx, `want a positive duration such as "1s", "1m" or "1h"`)
			}
			l.Per, perOff = d, m.val.off
		case "name":
			if m.val.kind != jString || strings.TrimSpace(m.val.str) == "" {
				return l, p.errorf(m.val.off, fctx, "want a non-empty string")
			}
			l.Name = m.val.str
		case "tools", "by":
			ss, err := p.strings(m.val, fctx)
			if err != nil {
				return l, err
			}
			if m.key == "tools" {
				l.Tools = ss
			} else {
				l.By = ss
			}
			probe := PolicyLimit{Calls: 1, Per: 1}
			if m.key == "tools" {
				probe.Tools = ss
			} else {
				probe.By = ss
			}
			if err := probe.Check(); err != nil {
				return l, p.errorf(m.val.off, ctx, "%v", err)
			}
		default:
			return l, p.errorf(m.off, ctx, `unknown field %q (a limit has "calls" or "searches", "per", "burst", "tools", "by" and "name")`, m.key)
		}
	}
	if l.Per == 0 {
		return l, p.errorf(perOff, ctx, `no "per": say the period of the count ("per": "1m")`)
	}
	if err := l.Check(); err != nil {
		return l, p.errorf(v.off, ctx, "%v", err)
	}
	return l, nil
}
