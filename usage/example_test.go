package usage_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/toolsift/toolsift/usage"
)

// A memory learns that a request led to a tool and votes for it when a
// request like it comes again. The vectors stand for a sentence encoder's
// (retrieval.Retriever.Record computes them, and the terms, from the
// request's text).
func Example() {
	mem, err := usage.New(nil)
	if err != nil {
		panic(err)
	}
	ann := usage.Caller{Scope: "team", Identity: "ann"}
	request := func(words string, vec ...float32) usage.Request {
		return usage.Request{Vector: vec, Terms: usage.HashTerms(strings.Fields(words))}
	}
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for _, call := range []struct {
		req  usage.Request
		tool string
	}{
		{request("remember alice works acme", 0.9, 0.1, 0.3, 0.3), "memory__create_entities"},
		{request("read notes file", 0.1, 0.9, 0.2, 0.4), "filesystem__read_text_file"},
		{request("sum two numbers", 0.2, 0.1, 0.9, 0.4), "everything__get-sum"},
	} {
		if err := mem.Record(usage.Event{Caller: ann, Request: call.req, Tool: call.tool, Hash: "v1", Time: at}); err != nil {
			panic(err)
		}
	}
	again := usage.Query{Request: request("keep mind alice employed acme", 0.85, 0.15, 0.3, 0.4)}
	for _, v := range mem.Votes(ann, again) {
		fmt.Printf("%s: weight %.2f, learned from %d call\n", v.Tool, v.Weight, v.Calls)
	}
	// Another identity of the team gets no vote from ann's call alone.
	fmt.Println(len(mem.Votes(usage.Caller{Scope: "team", Identity: "bob"}, again)))
	// Output:
	// memory__create_entities: weight 0.74, learned from 1 call
	// 0
}
