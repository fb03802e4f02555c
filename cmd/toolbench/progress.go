package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/toolsift/toolsift/upstream"
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
	// samples are (time, done) at recent Adds, oldest first: the ETA is
	// the rate measured over them, not the mean since start, which counts
	// the warm-up before the first unit (loading a model, a cold cache)
	// and misses a rate that changes as the work goes on.
	samples []progressSample
}

type progressSample struct {
	at   time.Time
	done int
}

// etaWindow is how far back the rate behind the ETA looks.
const etaWindow = 5 * time.Second

// newProgress starts a bar for total units of work.
func newProgress(w io.Writer, enabled bool, label string, total int) *progress {
	return &progress{w: w, enabled: enabled && total > 0, label: label, total: total, start: time.Now()}
}

// Add records n more units done.
func (p *progress) Add(n int) {
	if !p.enabled {
		return
	}
	p.addAt(n, time.Now())
}

// addAt is Add at a given time (tests drive the clock). p.mu is not held.
func (p *progress) addAt(n int, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.samples = append(p.samples, progressSample{now, p.done})
	// Keep one sample at or before the window's start, so the rate spans it.
	for len(p.samples) > 2 && !p.samples[1].at.After(now.Add(-etaWindow)) {
		p.samples = p.samples[1:]
	}
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
	if left, ok := p.eta(now); ok {
		eta = left.Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r%-10s [%s%s] %d/%d %5.1f%% %s elapsed, %s left\x1b[K",
		p.label, strings.Repeat("=", filled), strings.Repeat(" ", width-filled),
		p.done, p.total, 100*frac, elapsed.Round(100*time.Millisecond), eta)
	p.shown = true
}

// eta is the time left at the rate measured over the recent samples: from
// the oldest kept sample to now, so a stall slows the rate as it lasts.
// With one sample (one Add so far) the only rate there is runs from start.
// p.mu is held.
func (p *progress) eta(now time.Time) (time.Duration, bool) {
	if p.done <= 0 || p.done >= p.total || len(p.samples) == 0 {
		return 0, false
	}
	from := progressSample{p.start, 0}
	if len(p.samples) > 1 {
		from = p.samples[0]
	}
	units, span := p.done-from.done, now.Sub(from.at)
	if units <= 0 || span <= 0 {
		return 0, false
	}
	return time.Duration(float64(span) / float64(units) * float64(p.total-p.done)), true
}

// connectProgress keeps one line on a terminal while servers connect:
// "connecting: 12/73 ready, 1 failed, 60 pending (8.2s)", redrawn in place
// as servers report (upstream.HubOptions.Progress) and as time passes, and
// erased when the connection is over. Like progress, it waits a moment
// before drawing, so that a quick start (cached servers) prints nothing.
type connectProgress struct {
	w     io.Writer
	start time.Time
	delay time.Duration
	quit  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	last    upstream.Progress
	known   bool // last holds a report
	shown   bool // the line is on the terminal
	stopped bool
}

// connectProgressDelay is how long connecting runs before the line shows
// (tests set it to 0).
var connectProgressDelay = 500 * time.Millisecond

// startConnectProgress starts the line on w; stop erases it. The returned
// value's update is an upstream.HubOptions.Progress.
func startConnectProgress(w io.Writer) *connectProgress {
	p := &connectProgress{w: w, start: time.Now(), delay: connectProgressDelay, quit: make(chan struct{}), done: make(chan struct{})}
	go p.tick()
	return p
}

func (p *connectProgress) tick() {
	defer close(p.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case now := <-t.C:
			p.mu.Lock()
			p.draw(now)
			p.mu.Unlock()
		}
	}
}

// update records a report and redraws the line with it.
func (p *connectProgress) update(pr upstream.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.known = pr, true
	p.draw(time.Now())
}

// draw writes the line, once connecting has run for the delay. p.mu is held.
func (p *connectProgress) draw(now time.Time) {
	elapsed := now.Sub(p.start)
	if p.stopped || !p.known || elapsed < p.delay {
		return
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", connectLine(p.last, elapsed))
	p.shown = true
}

// stop ends the line, erasing it; later reports draw nothing.
func (p *connectProgress) stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	p.mu.Unlock()
	close(p.quit)
	<-p.done
}

// connectLine is the text of the line: servers turned off in the config
// are left out of the count.
func connectLine(pr upstream.Progress, elapsed time.Duration) string {
	return fmt.Sprintf("connecting: %d/%d ready, %d failed, %d pending (%.1fs)",
		pr.Ready, pr.Servers-pr.Disabled, pr.Failed, pr.Pending, elapsed.Seconds())
}
