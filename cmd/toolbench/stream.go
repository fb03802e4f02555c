package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/internal/termsafe"
)

// maxLiveArgs is how many runes of a tool call's arguments are printed as
// they stream; the call's line after it runs shows them again.
const maxLiveArgs = 120

// liveLine prints a reply as it streams: its text after "  > " (later lines
// indented), each tool call as "  → name " and its arguments as they come,
// cut at maxLiveArgs runes. The step's next event ends the reply (done).
type liveLine struct {
	open  bool // a line is being written
	text  bool // it is the text's
	call  int  // else the call's index
	names []string
	shown []int // runes of arguments printed, by call index
}

func (l *liveLine) add(w io.Writer, d agent.Delta) {
	if !d.Tool {
		if d.Text == "" {
			return
		}
		if !l.open || !l.text {
			l.end(w)
			fmt.Fprint(w, "  > ")
			l.open, l.text = true, true
		}
		fmt.Fprint(w, strings.ReplaceAll(termsafe.String(d.Text), "\n", "\n    "))
		return
	}
	for len(l.names) <= d.Index {
		l.names = append(l.names, "")
		l.shown = append(l.shown, 0)
	}
	if d.Name != "" {
		l.names[d.Index] += d.Name
	}
	if !l.open || l.text || l.call != d.Index {
		l.end(w)
		fmt.Fprintf(w, "  → %s ", termsafe.String(l.names[d.Index]))
		l.open, l.text, l.call = true, false, d.Index
	}
	args := termsafe.String(strings.Join(strings.Fields(d.Arguments), " "))
	switch n := utf8.RuneCountInString(args); {
	case l.shown[d.Index] >= maxLiveArgs:
	case l.shown[d.Index]+n > maxLiveArgs:
		fmt.Fprint(w, string([]rune(args)[:maxLiveArgs-l.shown[d.Index]])+"…")
		l.shown[d.Index] = maxLiveArgs
	default:
		fmt.Fprint(w, args)
		l.shown[d.Index] += n
	}
}

// end finishes the line being written, if any.
func (l *liveLine) end(w io.Writer) {
	if l.open {
		fmt.Fprintln(w)
	}
	l.open = false
}

// done ends the streamed reply: the next one starts anew.
func (l *liveLine) done(w io.Writer) {
	l.end(w)
	*l = liveLine{}
}
