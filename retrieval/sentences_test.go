package retrieval_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/retrieval"
)

func TestSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Get the weather in Paris", []string{"Get the weather in Paris"}},
		{
			"Find the flight to Oslo. Then book a hotel near the center! Email the plan to Kari?",
			[]string{"Find the flight to Oslo.", "Then book a hotel near the center!", "Email the plan to Kari?"},
		},
		{
			// Short pieces join their neighbour; "3.5" and "e.g." do not split.
			"Thanks. Convert 3.5 kg to pounds, e.g. for a recipe. Then stop.",
			[]string{"Thanks. Convert 3.5 kg to pounds, e.g. for a recipe. Then stop."},
		},
		{
			"Steps:\n1. Cook the pasta in salted water\n2. Fry the bacon until crispy",
			[]string{"Steps: 1. Cook the pasta in salted water", "2. Fry the bacon until crispy"},
		},
		{"Read the file; count its words; report the total", []string{"Read the file;", "count its words;", "report the total"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, retrieval.Sentences(tt.in)); diff != "" {
				t.Errorf("sentences mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// At most 8 sentences: the rest joins the last.
	long := strings.Repeat("Do one more thing now. ", 12)
	got := retrieval.Sentences(long)
	if len(got) != 8 || !strings.HasSuffix(got[7], "Do one more thing now.") || len(strings.Fields(got[7])) != 5*5 {
		t.Errorf("12 sentences gave %d: %q", len(got), got)
	}
}

// TestRetrieveMultiStep checks that each step of a multi-step task gets its
// tool into a short list, thanks to sentence searches.
func TestRetrieveMultiStep(t *testing.T) {
	r := newRetriever(t, newIndex(t), &retrieval.Options{K: 3})
	ms, err := r.Retrieve(t.Context(), retrieval.Query{
		Task: "Look up the weather forecast for Bergen for the next three days. " +
			"Then create a calendar event for the hike on the best day. " +
			"Finally send an email to the hiking group with the plan.",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := names(ms)
	for _, want := range []string{"weather__get_forecast", "calendar__create_event", "mail__send_email"} {
		if !contains(got, want) {
			t.Errorf("Retrieve = %v, want %s among the top 3", got, want)
		}
	}
}
