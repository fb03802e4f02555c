package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestLogEscapesServerText: a server's text in serve's log (an error, a
// tool's name or stderr) cannot act on the terminal, in either format.
func TestLogEscapesServerText(t *testing.T) {
	evil := "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07"
	for _, json := range []bool{false, true} {
		var buf bytes.Buffer
		hopts := &slog.HandlerOptions{ReplaceAttr: escapeAttr}
		var h slog.Handler = slog.NewTextHandler(&buf, hopts)
		if json {
			h = slog.NewJSONHandler(&buf, hopts)
		}
		slog.New(h).Warn("server failed", "server", "s"+evil, "error", errors.New("boom"+evil), "stderr", "c1 \u009b2J")
		out := buf.String()
		if strings.ContainsAny(out, "\x1b\x07\u009b") {
			t.Errorf("json=%v: a control character reached the log: %q", json, out)
		}
		if !strings.Contains(out, `x1b[2J`) || !strings.Contains(out, "boom") {
			t.Errorf("json=%v: log %q lacks the escaped text", json, out)
		}
	}
}
