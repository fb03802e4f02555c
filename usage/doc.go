// Package usage is toolsift's memory of the calls it routes: which tools a
// request led to, so that a later request like it finds those tools. The
// bundled sentence encoder matches a request to an earlier request much
// better than to a tool's description, and a team asks for the same things
// again and again, in its own words.
//
// A [Memory] keeps, per scope (a team, a user, or one scope for
// everything), what it is told ([Memory.Record]: a request, kept as its
// sentence-encoder vector, quantised to int8, and its hashed terms, led an
// identity to a successful call of one version of a tool), bounded in calls
// and bytes (Options.MaxCalls, MaxBytes; the weakest calls go first: the
// most decayed, then the least repeated, then the oldest), each call
// counting half as much every Options.HalfLife. Texts are kept only with
// Options.KeepText.
//
// A ranking asks it what a new request's neighbours vote for
// ([Memory.Votes]). An earlier request votes when it stands out as like
// the new one: its similarity (its vector's cosine and its terms'
// idf-weighted cosine, half each; or, when one of the two requests has
// fewer than eight terms, its vector's alone, at a higher bar) stands two
// standard deviations above the scope's mean similarity to the new
// request and above a floor. It votes for every tool it led to, by how
// far it stands out, and a request that led to several tools votes by the
// share of them that the ranking without the memory found too. A tool's
// weight is its share of all the votes cast, times how much evidence
// stands behind it (saturating), so that neighbours that disagree ("list
// storage accounts", "list storage containers") lift no tool far, and a
// close, consistent match lifts its tool to the top.
// retrieval.Options.Usage consults a Memory at every ranking, and
// retrieval.Retriever.Record tells it of a call; the caller of a ranking
// or a call is in its context ([WithCaller]).
//
// Poisoning: an identity's calls always count for itself, but for another
// caller only once enough distinct identities vote for the tool
// (Options.Support, default 2), and each identity's votes are capped; a
// call votes only for the version of the tool it was made with (its
// content hash, checked at every ranking through Query.Valid), so a tool
// changed upstream, quarantined or gone from the catalog gets no votes
// from its old calls.
//
// State: [Memory.Marshal] writes one scope (for a store.Store, one value
// per scope), [Memory.Merge] adds a scope another process wrote (a
// replica's) so that merging the same state twice changes nothing,
// [Memory.Replace] takes a stored scope as the truth (what a process that
// keeps its memory in a store does before it records again the calls it
// has not written);
// [Memory.Entries] and [Memory.Forget] list and forget calls by identity,
// tool or age. The same events recorded in the same order give the same
// memory and the same votes, whenever they are asked: a scope's "now" is
// its latest call.
package usage
