package think

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Incomplete says that an answer was made without some servers' tools:
// those still connecting, which have not listed them yet (a later step or
// search sees them), and those that failed (theirs will not come). The
// Think step itself knows no servers: a Toolset over a Hub fills it from
// the Hub (toolsift.Toolset.Think, Find, SearchTools, Explain), so that a
// step, a search answer and an explanation say the same. nil means the
// answer saw every server's tools.
type Incomplete struct {
	// Connecting names the servers still connecting, sorted.
	Connecting []string `json:"connecting,omitempty"`
	// Failed names the servers that failed, sorted; why is theirs to read
	// who runs them (toolsift.Toolset.Status), not in an answer a model or
	// a gateway's client reads.
	Failed []string `json:"failed,omitempty"`
	// Login names the servers whose tools are listed at the first login
	// to them, which nobody has made yet (a gateway's per-user servers:
	// gateway.Options.PerUser), sorted by server, each with the page to
	// log in at. They are not among Failed.
	Login []Login `json:"login,omitempty"`
	// Note says the above in a sentence, for the model.
	Note string `json:"note"`
}

// Login is a server whose tools join at the first login to it, and the
// page to log in at.
type Login struct {
	Server string `json:"server"`
	URL    string `json:"url"`
}

// NewIncomplete returns the Incomplete of an answer made while the
// servers connecting were still connecting and those failed had failed,
// with its Note; nil when both are empty.
func NewIncomplete(connecting, failed []string) *Incomplete {
	return NewIncompleteLogin(connecting, failed, nil)
}

// NewIncompleteLogin is NewIncomplete with the servers of login, whose
// tools are listed at the first login to them (Incomplete.Login); nil
// when all three are empty.
func NewIncompleteLogin(connecting, failed []string, login []Login) *Incomplete {
	if len(connecting) == 0 && len(failed) == 0 && len(login) == 0 {
		return nil
	}
	var note []string
	if n := len(connecting); n > 0 {
		note = append(note, fmt.Sprintf("%s still connecting (%s): %s not listed yet; search again in a few seconds to see them.",
			count(n, "server is", "servers are"), strings.Join(connecting, ", "), plural(n, "its tools are", "their tools are")))
	}
	if n := len(failed); n > 0 {
		note = append(note, fmt.Sprintf("%s (%s): %s not available.",
			count(n, "server failed", "servers failed"), strings.Join(failed, ", "), plural(n, "its tools are", "their tools are")))
	}
	if n := len(login); n > 0 {
		names, urls := make([]string, n), make([]string, n)
		for i, l := range login {
			names[i], urls[i] = l.Server, l.URL
		}
		note = append(note, fmt.Sprintf("%s (%s): %s not listed until someone logs in; log in at %s to use them.",
			count(n, "server lists its tools at the first login to it", "servers list their tools at the first login to them"),
			strings.Join(names, ", "), plural(n, "its tools are", "their tools are"), strings.Join(urls, ", ")))
	}
	return &Incomplete{Connecting: connecting, Failed: failed, Login: login, Note: strings.Join(note, " ")}
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// AddTo returns a search_tools answer of Thinker.SearchTools (a JSON
// object) with in as its "incomplete" member; answer itself when in is
// nil or answer is not a JSON object.
func (in *Incomplete) AddTo(answer string) string {
	if in == nil || !strings.HasSuffix(answer, "}") || !strings.HasPrefix(answer, "{") {
		return answer
	}
	b, err := json.Marshal(in)
	if err != nil {
		return answer
	}
	sep := ","
	if strings.TrimSpace(answer[1:len(answer)-1]) == "" {
		sep = ""
	}
	return answer[:len(answer)-1] + sep + `"incomplete":` + string(b) + "}"
}
