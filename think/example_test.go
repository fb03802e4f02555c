package think_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// The model called search_tools (think.SearchTool, which a step offers
// when it leaves tools out): the loop answers with the names it found, and
// offers them at its next step.
func ExampleThinker_SearchTools() {
	ctx := context.Background()
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		log.Fatal(err)
	}
	ix, err := toolindex.New(emb, nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = ix.Upsert(ctx,
		tool.Tool{Name: "calendar__create_event", Description: "Create a calendar event. Attendees get an invitation."},
		tool.Tool{Name: "calendar__list_events", Description: "List calendar events between two dates."},
		tool.Tool{Name: "mail__send_email", Description: "Send an email to a recipient."},
	)
	if err != nil {
		log.Fatal(err)
	}
	th, err := think.New(ix, nil)
	if err != nil {
		log.Fatal(err)
	}
	answer, found, err := th.SearchTools(ctx, json.RawMessage(`{"query": "create a calendar event", "k": 1}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer)
	fmt.Println(len(found), "tool to add to the next step:", found[0].Tool.Name)
	// Output:
	// {"tools":[{"name":"calendar__create_event","description":"Create a calendar event."}]}
	// 1 tool to add to the next step: calendar__create_event
}
