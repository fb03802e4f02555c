package retrieval_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/rankopt"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// longTool's description says what it is for only after the semantic
// encoder's first window (256 bytes): its first paragraph is about
// something else.
var longTool = tool.Tool{Name: "project_admin", Server: "admin", Description: strings.Join([]string{
	"Administrative operations for a hosted project: this tool groups many maintenance actions behind one",
	"action parameter. Choose the action, give the project id and the action's own arguments; the answer is",
	"the API's JSON. Actions that change state need the admin scope on the token that the server was started with.",
	"Some actions are slow and return an operation id that can be polled later.",
	"The action send_invoice_reminder emails a customer a polite reminder that an invoice is overdue, with a",
	"link to pay it online.",
}, " ")}

// longToolIndex indexes longTool among the everything server's tools and
// three that share words with its later text (an email, invoices, a
// project).
func longToolIndex(t *testing.T) *toolindex.Index {
	t.Helper()
	tools := append([]tool.Tool{longTool}, everything...)
	tools = append(tools,
		tool.Tool{Name: "send_email", Server: "mail", Description: "Send an email message to a recipient with a subject and body."},
		tool.Tool{Name: "list_invoices", Server: "billing", Description: "List the invoices of an account, paid and unpaid."},
		tool.Tool{Name: "create_project", Server: "admin", Description: "Create a new hosted project."},
	)
	return semanticIndex(t, tools...)
}

// windowsOn searches long descriptions' further windows, at the weight
// docs/measurements.md measured.
var windowsOn = rankopt.Features{WindowWeight: 1}

// TestLongDescriptionWindows: a request for what a long description says
// late is answered by that tool, through its further windows; without
// them, the encoder reads only the first window and misses it.
func TestLongDescriptionWindows(t *testing.T) {
	if n := len(longTool.Description); n < 2*256 {
		t.Fatalf("the test needs a description beyond the first window: %d bytes", n)
	}
	ix := longToolIndex(t)
	ctx := context.Background()
	q := retrieval.Query{Task: "nudge the client whose bill is late so they settle it"}
	rank := func(o retrieval.Options) []string {
		o.K = 3
		ms, err := newRetriever(t, ix, &o).Retrieve(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return names(ms)
	}
	// The semantic signal puts it first; in Hybrid, the word signals
	// favour list_invoices ("invoice"), and it joins the top 3.
	for _, c := range []struct {
		mode retrieval.Mode
		top  int
	}{{retrieval.Semantic, 1}, {retrieval.Hybrid, 3}} {
		if got := rank(retrieval.Options{Mode: c.mode}); contains(got[:c.top], "project_admin") {
			t.Fatalf("%v: without windows project_admin is already in the top %d (%v): the test needs a request that only its later text answers", c.mode, c.top, got)
		}
		if got := rank(withFeatures(retrieval.Options{Mode: c.mode}, windowsOn)); !contains(got[:c.top], "project_admin") {
			t.Errorf("%v: %v; want project_admin in the top %d by its later text", c.mode, got, c.top)
		}
	}
	if _, err := retrieval.New(ix, ptr(withFeatures(retrieval.Options{}, rankopt.Features{WindowWeight: 1.5}))); err == nil {
		t.Error("WindowWeight 1.5 accepted")
	}
}

// TestLongDescriptionLaterWords: with the defaults (windows off), a long
// description's later text is still read by the word signals: BM25F and
// the n-gram vectors index the whole description, not the encoder's first
// window, so a request in the later text's own words finds the tool in the
// top 3. (Not first: the sentence encoder, which reads only the first
// window, puts send_email and list_invoices first; windows, measured and
// off by default, would: docs/measurements.md, "Everyday requests".)
func TestLongDescriptionLaterWords(t *testing.T) {
	ix := longToolIndex(t)
	for _, q := range []string{
		"send an invoice reminder to a customer",
		"email the customer a polite reminder about the overdue invoice",
	} {
		ms, err := newRetriever(t, ix, &retrieval.Options{K: 3}).Retrieve(context.Background(), retrieval.Query{Task: q})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(ms); !contains(got, "project_admin") {
			t.Errorf("%q: %v; want project_admin in the top 3, by the words of its description's later text", q, got)
		}
	}
}
