package tool

// Change describes how one server's tool list changed, as emitted by
// upstream.Hub after a tools/list_changed notification, a reconnect or a
// disconnect. Index.Apply consumes it. Tools in Added and Changed carry their
// Hash; Removed holds qualified names.
type Change struct {
	Server  string
	Added   []Tool
	Changed []Tool
	Removed []string
}

// Empty reports whether the change changes nothing.
func (c Change) Empty() bool {
	return len(c.Added) == 0 && len(c.Changed) == 0 && len(c.Removed) == 0
}
