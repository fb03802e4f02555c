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
// Words splits identifiers of every common shape (camelCase, snake_case,
// kebab-case, dotted and server__tool names, letters and digits) and
// lowercases them; Terms additionally drops a short English stopword list and
// applies a light Porter step-1 stemmer (Stem).
package textproc
