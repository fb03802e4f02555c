package toolsift

import (
	"bytes"
	"log/slog"
	"testing"
)

// TestStderrWarnings: one line per warning, once; a server's Status
// warning (the "warning" attribute upstream logs it in) reads as itself.
func TestStderrWarnings(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newStderrWarnings(&b))
	for range 2 {
		log.Warn("upstream: tool changed since first seen", "server", "up", "tool", "up__lookup", "warning", `tool "up__lookup" changed since first seen (description)`)
		log.Warn("upstream: re-listing tools failed", "server", "up", "error", "boom")
		log.Info("not shown")
	}
	want := "toolsift: server up: tool \"up__lookup\" changed since first seen (description)\n" +
		"toolsift: upstream: re-listing tools failed server=up error=boom\n"
	if b.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", b.String(), want)
	}
}
