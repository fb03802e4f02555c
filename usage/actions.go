package usage

import (
	"strings"

	"github.com/toolsift/toolsift/internal/textproc"
)

// Actions: what a request asks to do, and what a tool does, in four
// classes (read, create, update, delete), from English action words: the
// request's terms and the words of the tool's name (after its server's
// prefix). The sentence encoder and the terms' cosine weigh the thing a
// request is about far more than what it asks to do with it: "show the
// rows in my Airtable contacts table" is at a cosine of 0.697 to "add a
// 'Due date' column to my airtable table", which led to create_field. So
// an earlier request whose action agrees with its tool's (add, create)
// does not vote for that tool in a new request whose actions are all
// others (show: a read), tuning.Actions; a request or a tool with no
// action word (another language, "what is 2 plus 3", get-sum asked as
// "add 2 and 3") is never held to it (docs/measurements.md, "A search
// that learns from the calls it routes").
type actions uint8

const (
	actRead actions = 1 << iota
	actCreate
	actUpdate
	actDelete
)

// actionWords are each class's words, before textproc's analysis. Words
// of several meanings for a tool ("write", "open", "run", "move") are
// left out: an action no word names is no action here.
var actionWords = map[actions]string{
	actRead:   "get show list view display read fetch find search look see check retrieve query describe lookup browse inspect",
	actCreate: "create add new make insert append register",
	actUpdate: "update edit change modify rename set replace patch",
	actDelete: "delete remove drop erase unlink forget purge destroy clear",
}

// actionStems are the classes of each word's index term (textproc.Terms),
// actionHashes the same by hashed term (HashTerms), as requests keep
// them.
var (
	actionStems  = map[string]actions{}
	actionHashes = map[uint32]actions{}
)

func init() {
	for class, words := range actionWords {
		for _, w := range strings.Fields(words) {
			for _, s := range textproc.Terms(w) {
				actionStems[s] |= class
				actionHashes[HashTerms([]string{s})[0]] |= class
			}
		}
	}
}

// termActions are the classes of a request's hashed terms.
func termActions(terms []uint32) actions {
	var a actions
	for _, t := range terms {
		a |= actionHashes[t]
	}
	return a
}

// toolActions are the classes of the words of a tool's name, without its
// server's prefix (SERVER__).
func toolActions(name string) actions {
	if i := strings.LastIndex(name, "__"); i >= 0 {
		name = name[i+2:]
	}
	var a actions
	for _, s := range textproc.Terms(name) {
		a |= actionStems[s]
	}
	return a
}

// otherAction reports whether a request of classes r (which led to a
// tool of classes tool) says nothing to a new request of classes q for
// that tool: r's action was the tool's, and q's is another.
func otherAction(q, r, tool actions) bool {
	return q != 0 && tool != 0 && r&tool != 0 && q&tool == 0
}
