package toolsift

import (
	"fmt"
	"path"
	"slices"
	"sort"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// Pins say which tools are pinned: offered at every step whatever the
// query. It is the one rule for the library (Options.Pin and the config's
// "alwaysLoad" / "alwaysLoadTools") and for toolsift serve.
type Pins struct {
	// Servers pins every tool of these servers ("alwaysLoad": true).
	Servers []string
	// ServerTools pins, per server, tools by the names the server lists
	// them under, or globs of them ("alwaysLoadTools").
	ServerTools map[string][]string
	// Tools pins tools by name as a Toolset lists them (server__tool), or
	// by glob of those names (path.Match).
	Tools []string
}

// Resolve returns the names of the pinned tools among tools, sorted, and a
// warning for each pin that matches none, naming it.
func (p Pins) Resolve(tools []tool.Tool) (names, warnings []string) {
	seen := map[string]bool{}
	add := func(t tool.Tool) {
		if !seen[t.Name] {
			seen[t.Name] = true
			names = append(names, t.Name)
		}
	}
	for _, s := range p.Servers {
		n := 0
		for _, t := range tools {
			if t.Server == s {
				add(t)
				n++
			}
		}
		if n == 0 {
			warnings = append(warnings, fmt.Sprintf("alwaysLoad server %q has no tools (is it connected?)", s))
		}
	}
	servers := make([]string, 0, len(p.ServerTools))
	for s := range p.ServerTools {
		servers = append(servers, s)
	}
	sort.Strings(servers)
	for _, s := range servers {
		for _, pat := range p.ServerTools[s] {
			n := 0
			for _, t := range tools {
				own := t.OriginalName
				if own == "" {
					own = t.Name
				}
				if ok, _ := path.Match(pat, own); t.Server == s && (ok || pat == own) {
					add(t)
					n++
				}
			}
			if n == 0 {
				warnings = append(warnings, fmt.Sprintf("alwaysLoadTools of server %q: %q matches no tool", s, pat))
			}
		}
	}
	for _, pat := range p.Tools {
		n := 0
		for _, t := range tools {
			if ok, _ := path.Match(pat, t.Name); ok || pat == t.Name {
				add(t)
				n++
			}
		}
		if n == 0 {
			warnings = append(warnings, fmt.Sprintf("pinned tool %q matches no tool", pat))
		}
	}
	slices.Sort(names)
	return names, warnings
}

// configPins is what cfg pins (servers that are not disabled) and pins.
func configPins(cfg *config.Config, pins []string) Pins {
	p := Pins{Tools: pins}
	if cfg == nil {
		return p
	}
	for name, sc := range cfg.Servers {
		if sc.Disabled {
			continue
		}
		if sc.AlwaysLoad {
			p.Servers = append(p.Servers, name)
		}
		if len(sc.AlwaysLoadTools) > 0 {
			if p.ServerTools == nil {
				p.ServerTools = map[string][]string{}
			}
			p.ServerTools[name] = sc.AlwaysLoadTools
		}
	}
	slices.Sort(p.Servers)
	return p
}

// pin resolves p against the index and makes the Think step offer those
// tools first (think's Retrieval.Pinned, after any the options named).
// Before ready: nothing reads ts.th concurrently yet.
func (ts *Toolset) pin(p Pins) error {
	names, warnings := p.Resolve(ts.Tools())
	if ts.warnFailed {
		for _, w := range warnings {
			ts.log.Warn("toolsift: pin", "warning", w)
		}
	}
	ts.warnings = append(ts.warnings, warnings...)
	ts.pinned = names
	if len(names) == 0 {
		return nil
	}
	to := ts.th.Options()
	pinned := slices.Clone(to.Retrieval.Pinned)
	for _, n := range names {
		if !slices.Contains(pinned, n) {
			pinned = append(pinned, n)
		}
	}
	to.Retrieval.Pinned = pinned
	th, err := think.New(ts.ix, &to)
	if err != nil {
		return fmt.Errorf("%w: pins: %w", ErrOptions, err)
	}
	ts.th = th
	return nil
}

// Pinned returns the names of the pinned tools (Options.Pin and the
// config's alwaysLoad and alwaysLoadTools, resolved when Open returned),
// sorted.
func (ts *Toolset) Pinned() []string { return slices.Clone(ts.pinned) }
