package toolsift

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// stderrWarnings is the handler of a Toolset whose Options.Logger is nil:
// a failed server, a pin that matches nothing or a config line that was
// ignored must not go unseen, so warnings and errors are written to stderr,
// one line each, and the same message about the same server only once.
// Debug and info records are dropped. Set Options.Logger to route them
// elsewhere, or to slog.New(slog.DiscardHandler) to silence them.
type stderrWarnings struct {
	w     io.Writer
	attrs []slog.Attr
	state *warnState
}

type warnState struct {
	mu   sync.Mutex
	seen map[string]bool
}

func newStderrWarnings(w io.Writer) *stderrWarnings {
	return &stderrWarnings{w: w, state: &warnState{seen: map[string]bool{}}}
}

func (h *stderrWarnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *stderrWarnings) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	msg := r.Message
	if !strings.HasPrefix(msg, "toolsift") {
		msg = "toolsift: " + msg
	}
	b.WriteString(msg)
	server := ""
	add := func(a slog.Attr) bool {
		if a.Key == "server" {
			server = a.Value.String()
		}
		v := a.Value.String()
		if strings.ContainsAny(v, " \t\n\"=") || v == "" {
			v = fmt.Sprintf("%q", v)
		}
		fmt.Fprintf(&b, " %s=%s", a.Key, v)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	line := b.String()
	// A server's Status warning (upstream logs it word for word in "warning")
	// reads best as itself.
	var warning string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "warning" {
			warning = a.Value.String()
		}
		return true
	})
	if warning != "" && server != "" {
		line = "toolsift: server " + server + ": " + warning
	}
	key := r.Message + "\x00" + server
	if server == "" {
		key = line
	}
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	if h.state.seen[key] {
		return nil
	}
	h.state.seen[key] = true
	_, err := fmt.Fprintln(h.w, line)
	return err
}

func (h *stderrWarnings) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

// WithGroup is not needed by what logs here: groups are flattened.
func (h *stderrWarnings) WithGroup(string) slog.Handler { return h }
