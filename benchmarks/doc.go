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
// The package has no code outside its tests.
package benchmarks
