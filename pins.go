package toolsift

import (
	"fmt"
	"path"
	"slices"
	"sort"

	"github.com/toolsift/toolsift/config"
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
// tools first (think.Thinker.WithPinned). Before ready: the pins that
// match nothing are warnings; once ready, repin resolves them again as
// servers join.
func (ts *Toolset) pin(p Pins) error {
	ts.pins = p
	names, warnings := p.Resolve(ts.Tools())
	if ts.warnFailed {
		for _, w := range warnings {
			ts.log.Warn("toolsift: pin", "warning", w)
		}
	}
	ts.warnings = append(ts.warnings, warnings...)
	ts.pinMu.Lock()
	defer ts.pinMu.Unlock()
	return ts.usePins(names)
}

// repin resolves the pins again after a server's tools joined the index
// (a server that connected after Open returned, over a Hub of
// HubOptions.Background, or one that came back) and, when that pins more tools, makes the Think
// step offer them too. Pinned tools stay pinned: a tool that went away is
// simply not in the catalog to offer.
func (ts *Toolset) repin() {
	if len(ts.pins.Servers)+len(ts.pins.ServerTools)+len(ts.pins.Tools) == 0 {
		return
	}
	names, _ := ts.pins.Resolve(ts.Tools())
	ts.pinMu.Lock()
	defer ts.pinMu.Unlock()
	merged := slices.Clone(ts.pinned)
	for _, n := range names {
		if !slices.Contains(merged, n) {
			merged = append(merged, n)
		}
	}
	if len(merged) == len(ts.pinned) {
		return
	}
	slices.Sort(merged)
	if err := ts.usePins(merged); err != nil {
		ts.log.Warn("toolsift: pin", "error", err)
		return
	}
	ts.prepare()
}

// usePins makes names (sorted) the pinned tools: the base Thinker with
// them pinned besides its own replaces the Toolset's. ts.pinMu is held.
func (ts *Toolset) usePins(names []string) error {
	ts.pinned = names
	if len(names) == 0 {
		return nil
	}
	pins := slices.Clone(ts.base.Options().Retrieval.Pinned)
	for _, n := range names {
		if !slices.Contains(pins, n) {
			pins = append(pins, n)
		}
	}
	th, err := ts.base.WithPinned(pins)
	if err != nil {
		return fmt.Errorf("%w: pins: %w", ErrOptions, err)
	}
	ts.th.Store(th)
	return nil
}

// Pinned returns the names of the pinned tools (Options.Pin and the
// config's alwaysLoad and alwaysLoadTools), sorted: resolved when Open
// returned, and again each time a server's tools join the index (over a
// Hub of HubOptions.Background, the servers that connect after OpenHub).
func (ts *Toolset) Pinned() []string {
	ts.pinMu.Lock()
	defer ts.pinMu.Unlock()
	return slices.Clone(ts.pinned)
}
