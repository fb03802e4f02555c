// Package textproc is toolsift's text analysis: it turns tool names,
// descriptions and agent queries into the terms that the lexical index
// (BM25F in toolindex) and the local embedder count.
//
// One analysis serves both sides of every search, so a query and a tool
// document always meet on the same terms:
//
//	textproc.Words("getWeatherForecast")    // [get weather forecast]
//	textproc.Terms("Searching cities' weather") // [search citi weather]
//
// [Words] splits identifiers of every common shape (camelCase, snake_case,
// kebab-case, dotted and server__tool names, letters and digits) and
// lowercases them; [Terms] additionally drops a short English stopword list
// and applies a light Porter step-1 stemmer ([Stem]).
//
// Measured on BM25F alone over two public datasets (docs/measurements.md,
// "Text analysis", has the figures and the command), the stopword list
// helps on both. The stemmer is neutral on these two sets (their queries
// mostly reuse the tools' own word forms); it is kept
// because agents paraphrase ("calculating", "cities") where tools state
// ("calculate", "city"), and step 1 of Porter only merges inflections.
package textproc
