package toolsift

import "github.com/toolsift/toolsift/upstream"

// Hub returns the Hub behind the Toolset, for what a Toolset does not index:
// its servers' resources and prompts (Hub.Passthrough; a proxy such as
// toolsift serve passes them on). Call tools through the Toolset, which
// keeps its index current.
// It is nil for a Toolset made by New, which has no servers.
func (ts *Toolset) Hub() *upstream.Hub { return ts.hub }
