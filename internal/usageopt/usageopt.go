// Package usageopt sets the constants of package usage's rules (how
// earlier requests vote) to other values than the measured defaults: they
// are not part of the public API, but the benchmarks that measure the
// alternatives set them through this package. Package usage installs Set
// when it is initialised, so a program that imports usage can call it.
package usageopt

// Tuning are the constants of usage's votes (usage/votes.go, tuning); the
// zero value is usage's default.
type Tuning struct {
	// Alpha weighs the vectors' cosine against the terms' in a request's
	// similarity to another.
	Alpha float64
	// Gate (standard deviations above the scope's mean) and Floor (a
	// similarity) are what an earlier request must reach to vote; Soft
	// scales its vote by how far it stands above Floor.
	Gate, Floor, Soft float64
	// Tau is where a vote's weight saturates; Cap bounds a request's
	// evidence and an identity's.
	Tau, Cap float64
	// Prior, PriorMean and PriorSpread are the unrelated requests a small
	// scope's mean and spread are drawn towards.
	Prior, PriorMean, PriorSpread float64
	// CosFloor, when positive, lets a request vote by its vectors' cosine
	// alone too, with its own floor and prior.
	CosFloor, CosPriorMean, CosPriorSpread float64
	// CosMaxTerms, when positive, keeps the vectors-alone path to pairs
	// of requests of which one has fewer catalog terms than it.
	CosMaxTerms float64
	// Actions, when set, keeps an earlier request whose action was its
	// tool's from voting for it in a request that asks for another.
	Actions bool
}

// Set sets t on opts, a *usage.Options; it panics for anything else.
// usage.New checks the values.
var Set func(opts any, t Tuning)

// Default returns usage's default constants.
var Default func() Tuning
