// Package benchmarks holds toolsift's go test -bench suites: the Think-step
// selection (embed the query, hybrid search, budget selection) at 1,000 to
// 100,000 tools beside plain chromem-go queries, index build and warm start,
// tokenizing, budget selection, and retrieval quality on the shared datasets
// reported as benchmark metrics. It uses only the public API.
//
// Run them with
//
//	go test -run '^$' -bench . -benchmem ./benchmarks/
//
// The package has no code outside its tests. Its subfolder scriptedmodel is
// a program for lazystart.sh (a scripted OpenAI-compatible chat server),
// kept here rather than under internal/ because it imports agent, the top
// of the import graph, while internal/ holds helpers that sit low in it.
package benchmarks
