package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress draws a one-line progress bar on a terminal. It stays silent
// until the work has run for a second, so quick steps print nothing, and it
// is a no-op when disabled (stderr is not a terminal, or --quiet). Safe for
// concurrent use.
type progress struct {
	w       io.Writer
	enabled bool
	label   string
	total   int

	mu      sync.Mutex
	done    int
	start   time.Time
	lastOut time.Time
	shown   bool
}

// newProgress starts a bar for total units of work.
func newProgress(w io.Writer, enabled bool, label string, total int) *progress {
	return &progress{w: w, enabled: enabled && total > 0, label: label, total: total, start: time.Now()}
}

// Add records n more units done.
func (p *progress) Add(n int) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	now := time.Now()
	if now.Sub(p.start) < time.Second || now.Sub(p.lastOut) < 100*time.Millisecond {
		return
	}
	p.lastOut = now
	p.draw(now)
}

// Done finishes the bar, leaving the cursor on a fresh line if it was shown.
func (p *progress) Done() {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		p.done = p.total
		p.draw(time.Now())
		fmt.Fprintln(p.w)
	}
}

func (p *progress) draw(now time.Time) {
	const width = 30
	frac := float64(p.done) / float64(p.total)
	if frac > 1 {
		frac = 1
	}
	filled := int(frac * width)
	elapsed := now.Sub(p.start)
	eta := "--"
	if p.done > 0 && p.done < p.total {
		left := time.Duration(float64(elapsed) / float64(p.done) * float64(p.total-p.done))
		eta = left.Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r%-10s [%s%s] %d/%d %5.1f%% %s elapsed, %s left\x1b[K",
		p.label, strings.Repeat("=", filled), strings.Repeat(" ", width-filled),
		p.done, p.total, 100*frac, elapsed.Round(100*time.Millisecond), eta)
	p.shown = true
}
