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
// The synthetic catalogs' vectors (the n-gram embedder's and USE's) are
// real: the first run on a machine embeds them (the 100,000 tools took 7.5
// CPU-minutes, 27 minutes at a load of 15–24) and keeps them in a cache
// folder by content hash ($TOOLSIFT_BENCH_CACHE, default
// os.UserCacheDir()/toolsift-benchmarks; "off" embeds every time), from
// which later runs build their catalogs in seconds. The steps measured
// read no cache.
//
// The package has no code outside its tests. Its subfolder scriptedmodel is
// a program for lazystart.sh (a scripted OpenAI-compatible chat server),
// kept here rather than under internal/ because it imports agent, the top
// of the import graph, while internal/ holds helpers that sit low in it.
package benchmarks
