package retrieval

import (
	"regexp"
	"strings"
)

// Multi-intent requests (rankopt.Features.IntentQuota, off by default): "file the bug in the
// tracker, then tell the channel" asks two things, and the words of one
// ask can drown the other's in a whole-request ranking. The request is
// split into its asks (sentences, then clauses joined by "then", "also",
// "and then", "as well as", ";"), each ask is ranked on its own, and the
// best IntentQuota tools of each ask keep at least the score they have
// for their ask, so that every ask has tools near the top.

// maxIntents bounds the asks ranked for one request.
const maxIntents = 4

// minIntentWords is the fewest words an ask has; a shorter clause joins the
// one before it ("then stop").
const minIntentWords = 3

// clauseBreak matches where one ask ends and the next begins inside a
// sentence.
var clauseBreak = regexp.MustCompile(`(?i)\s*;\s*|,?\s+(?:and then|and also|as well as|then|also|plus)\s+`)

// intents returns the asks of a request, in order; one ask (or none) when
// it has no break.
func intents(text string) []string {
	var out []string
	for _, s := range sentences(text) {
		for _, c := range clauseBreak.Split(s, -1) {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			if len(strings.Fields(c)) < minIntentWords && len(out) > 0 {
				out[len(out)-1] += " " + c
				continue
			}
			out = append(out, c)
		}
	}
	if len(out) > maxIntents {
		out[maxIntents-1] = strings.Join(out[maxIntents-1:], " ")
		out = out[:maxIntents]
	}
	return out
}

// distinctServers reports whether the best tools of the asks' rankings
// come from at least two servers.
func distinctServers(ranks [][]Match) bool {
	first := ""
	for _, ms := range ranks {
		if len(ms) == 0 || ms[0].Tool.Server == "" {
			continue
		}
		switch s := ms[0].Tool.Server; {
		case first == "":
			first = s
		case s != first:
			return true
		}
	}
	return false
}
