package usage_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/internal/usageopt"
	"github.com/toolsift/toolsift/usage"
)

// The tests give requests vectors by hand: a request is a mix of a few
// "topics" (orthogonal directions) and a little of its own, so that
// similarities are what the test says. Terms come from the words.

const dim = 64

// topic returns the unit vector of topic i.
func topic(i int) []float32 {
	v := make([]float32, dim)
	v[i] = 1
	return v
}

// mix returns the unit vector of Σ w_i × topic(i) for the given pairs.
func mix(pairs ...float64) []float32 {
	v := make([]float32, dim)
	for i := 0; i+1 < len(pairs); i += 2 {
		v[int(pairs[i])] += float32(pairs[i+1])
	}
	return unit(v)
}

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	n = math.Sqrt(n)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

// terms are text's words, hashed (the tests' words need no stemming).
func terms(text string) []uint32 { return usage.HashTerms(strings.Fields(text)) }

func req(text string, vec []float32) usage.Request {
	return usage.Request{Vector: vec, Terms: terms(text), Text: text}
}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func newMemory(t *testing.T, o *usage.Options) *usage.Memory {
	t.Helper()
	m, err := usage.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func record(t *testing.T, m *usage.Memory, who usage.Caller, r usage.Request, tool string, at time.Time) {
	t.Helper()
	if err := m.Record(usage.Event{Caller: who, Request: r, Tool: tool, Hash: "h-" + tool, Time: at}); err != nil {
		t.Fatal(err)
	}
}

// current accepts every tool at the version record gives it.
func current(tool, hash string) bool { return hash == "h-"+tool }

// background fills a scope with unrelated requests (each of its own
// topic), so that a request like one of them stands out.
func background(t *testing.T, m *usage.Memory, who usage.Caller, n int) {
	t.Helper()
	for i := range n {
		record(t, m, who, req(fmt.Sprintf("unrelated chore number %d", i), mix(float64(20+i%40), 1, float64(1+i%7), 0.3)), fmt.Sprintf("chore_%d", i), t0)
	}
}

func votesFor(votes []usage.Vote, tool string) usage.Vote {
	i := slices.IndexFunc(votes, func(v usage.Vote) bool { return v.Tool == tool })
	if i < 0 {
		return usage.Vote{}
	}
	return votes[i]
}

var alice = usage.Caller{Scope: "team", Identity: "alice"}

// A request asked again in other words votes for the tool the first one
// led to, strongly; one like nothing the scope holds votes for nothing.
func TestVotesRepeat(t *testing.T) {
	m := newMemory(t, nil)
	background(t, m, alice, 30)
	record(t, m, alice, req("add 2 and 3", mix(0, 1, 1, 0.2)), "get-sum", t0)
	votes := m.Votes(alice, usage.Query{Request: req("what is 2 plus 3", mix(0, 1, 2, 0.2)), Valid: current})
	if len(votes) == 0 || votes[0].Tool != "get-sum" {
		t.Fatalf("votes %+v, want get-sum first", votes)
	}
	v := votes[0]
	if v.Weight < 0.5 || v.Calls != 1 || v.Identities != 1 || v.Similarity < 0.5 {
		t.Errorf("get-sum's vote %+v: want a weight of at least 0.5 from 1 call by 1 identity, a similarity of at least 0.5", v)
	}
	if got := m.Votes(alice, usage.Query{Request: req("book a flight to rome", topic(15)), Valid: current}); len(got) != 0 {
		t.Errorf("an unrelated request got votes %+v", got)
	}
	// Another scope holds nothing.
	if got := m.Votes(usage.Caller{Scope: "other", Identity: "alice"}, usage.Query{Request: req("add 2 and 3", mix(0, 1, 1, 0.2))}); len(got) != 0 {
		t.Errorf("another scope got votes %+v", got)
	}
}

// Neighbours that agree lift their tool more than neighbours that
// disagree: each tool's weight is its share of the votes.
func TestVotesDisagree(t *testing.T) {
	agree := newMemory(t, nil)
	split := newMemory(t, nil)
	for _, m := range []*usage.Memory{agree, split} {
		background(t, m, alice, 30)
	}
	a := req("list storage accounts", mix(3, 1, 4, 0.3))
	b := req("list storage containers", mix(3, 1, 5, 0.3))
	record(t, agree, alice, a, "accounts_list", t0)
	record(t, agree, alice, b, "accounts_list", t0)
	record(t, split, alice, a, "accounts_list", t0)
	record(t, split, alice, b, "containers_list", t0)
	q := req("show my storage accounts", mix(3, 1, 4, 0.15, 5, 0.15))
	one, two := votesFor(agree.Votes(alice, usage.Query{Request: q, Valid: current}), "accounts_list"), split.Votes(alice, usage.Query{Request: q, Valid: current})
	if len(two) != 2 {
		t.Fatalf("split votes %+v, want two tools", two)
	}
	if sum := two[0].Weight + two[1].Weight; sum >= one.Weight || two[0].Weight >= one.Weight {
		t.Errorf("split weights %.3f and %.3f, agreeing %.3f: want the split ones to share less than the agreeing one", two[0].Weight, two[1].Weight, one.Weight)
	}
}

// Poisoning: one identity's calls count for itself, and for another
// identity only once Support distinct identities stand behind the tool.
func TestVotesSupport(t *testing.T) {
	m := newMemory(t, nil) // Support 2
	bob := usage.Caller{Scope: "team", Identity: "bob"}
	carol := usage.Caller{Scope: "team", Identity: "carol"}
	background(t, m, carol, 30)
	r := req("deploy the staging app", mix(6, 1, 7, 0.2))
	q := req("deploy staging please", mix(6, 1, 8, 0.2))
	for range 50 {
		record(t, m, alice, r, "decoy_deploy", t0)
	}
	if v := votesFor(m.Votes(alice, usage.Query{Request: q, Valid: current}), "decoy_deploy"); v.Weight == 0 || v.Calls != 50 {
		t.Errorf("alice's own vote %+v: want her 50 calls to count for her", v)
	}
	if v := votesFor(m.Votes(bob, usage.Query{Request: q, Valid: current}), "decoy_deploy"); v.Weight != 0 {
		t.Errorf("bob got alice's vote alone: %+v", v)
	}
	record(t, m, carol, req("deploy to staging", mix(6, 1, 9, 0.2)), "decoy_deploy", t0)
	v := votesFor(m.Votes(bob, usage.Query{Request: q, Valid: current}), "decoy_deploy")
	if v.Weight == 0 || v.Identities != 2 || v.Calls != 51 {
		t.Errorf("bob's vote with alice and carol behind the tool: %+v, want 2 identities, 51 calls", v)
	}
	// One identity counts as its best vote, whatever its number of calls:
	// alice's 50 calls weigh as one.
	m2 := newMemory(t, nil)
	background(t, m2, carol, 30)
	record(t, m2, alice, r, "decoy_deploy", t0)
	record(t, m2, carol, req("deploy to staging", mix(6, 1, 9, 0.2)), "decoy_deploy", t0)
	if w := votesFor(m2.Votes(bob, usage.Query{Request: q, Valid: current}), "decoy_deploy").Weight; math.Abs(w-v.Weight) > 1e-9 {
		t.Errorf("alice's 50 calls weigh %.4f, her 1 call %.4f: want the same", v.Weight, w)
	}
	// Support 1 lets any identity's calls count for another.
	m3 := newMemory(t, &usage.Options{Support: 1})
	background(t, m3, carol, 30)
	record(t, m3, alice, r, "decoy_deploy", t0)
	if v := votesFor(m3.Votes(bob, usage.Query{Request: q, Valid: current}), "decoy_deploy"); v.Weight == 0 {
		t.Errorf("Support 1: bob got no vote from alice: %+v", v)
	}
}

// A call votes only for the version of the tool it was made with (a tool
// changed upstream, or gone from the catalog, gets no votes), and only for
// tools valid accepts.
func TestVotesHash(t *testing.T) {
	m := newMemory(t, nil)
	background(t, m, alice, 30)
	record(t, m, alice, req("add 2 and 3", mix(0, 1, 1, 0.2)), "get-sum", t0)
	q := req("what is 2 plus 3", mix(0, 1, 2, 0.2))
	if len(m.Votes(alice, usage.Query{Request: q, Valid: current})) == 0 {
		t.Fatal("no vote at the version called")
	}
	changed := func(tool, hash string) bool { return tool != "get-sum" && current(tool, hash) }
	if v := votesFor(m.Votes(alice, usage.Query{Request: q, Valid: changed}), "get-sum"); v.Weight != 0 {
		t.Errorf("get-sum changed upstream still voted for: %+v", v)
	}
}

// Older calls count less (HalfLife, counted from the scope's latest call,
// not the clock), and the same events give the same votes.
func TestVotesDecay(t *testing.T) {
	weight := func(age time.Duration) float64 {
		m := newMemory(t, &usage.Options{HalfLife: 24 * time.Hour})
		background(t, m, alice, 30)
		record(t, m, alice, req("add 2 and 3", mix(0, 1, 1, 0.2)), "get-sum", t0)
		record(t, m, alice, req("unrelated later chore", topic(63)), "chore_later", t0.Add(age))
		return votesFor(m.Votes(alice, usage.Query{Request: req("what is 2 plus 3", mix(0, 1, 2, 0.2)), Valid: current}), "get-sum").Weight
	}
	now, day, month := weight(0), weight(24*time.Hour), weight(30*24*time.Hour)
	if !(now > day && day > month) || month > now/100 {
		t.Errorf("get-sum's weight now %.4f, a day later %.4f, a month later %.4f: want it to fade", now, day, month)
	}
	if again := weight(24 * time.Hour); again != day {
		t.Errorf("the same events gave %.6f, then %.6f", day, again)
	}
}

func TestRecordErrors(t *testing.T) {
	m := newMemory(t, nil)
	for name, ev := range map[string]usage.Event{
		"no tool":     {Request: req("x", topic(1))},
		"no request":  {Tool: "t"},
		"not finite":  {Tool: "t", Request: usage.Request{Vector: []float32{float32(math.NaN())}}},
		"blank tool":  {Tool: " ", Request: req("x", topic(1))},
		"empty terms": {Tool: "t", Request: usage.Request{Terms: []uint32{}}},
	} {
		if err := m.Record(ev); !errors.Is(err, usage.ErrEvent) {
			t.Errorf("%s: Record = %v, want ErrEvent", name, err)
		}
	}
	for name, o := range map[string]usage.Options{
		"MaxCalls": {MaxCalls: -1}, "MaxBytes": {MaxBytes: -1}, "HalfLife": {HalfLife: -time.Hour}, "Support": {Support: -1},
	} {
		if _, err := usage.New(&o); !errors.Is(err, usage.ErrOptions) {
			t.Errorf("%s: New = %v, want ErrOptions", name, err)
		}
	}
	o := newMemory(t, nil).Options()
	if o.MaxCalls != 4096 || o.MaxBytes != 4<<20 || o.HalfLife != 30*24*time.Hour || o.Support != 2 { // the defaults Options documents
		t.Errorf("defaults %+v", o)
	}
}

func entries(m *usage.Memory, scope string) []usage.Entry {
	return slices.Collect(m.Entries(scope))
}

// The same call again counts once more; MaxCalls and MaxBytes bound a
// scope, the weakest calls evicted first (the most decayed, then the least
// repeated, then the oldest).
func TestBounds(t *testing.T) {
	m := newMemory(t, &usage.Options{MaxCalls: 3, HalfLife: time.Hour})
	r := func(i int) usage.Request { return req(fmt.Sprintf("request %d", i), topic(i)) }
	record(t, m, alice, r(1), "a", t0)
	record(t, m, alice, r(1), "a", t0.Add(time.Minute))
	record(t, m, alice, r(2), "b", t0.Add(2*time.Minute))
	record(t, m, alice, r(3), "c", t0.Add(3*time.Minute))
	record(t, m, alice, r(4), "d", t0.Add(4*time.Minute)) // evicts b: less repeated than a, older than c
	var got []string
	for e := range m.Entries("team") {
		got = append(got, fmt.Sprintf("%s×%d", e.Tool, e.Count))
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"a×2", "c×1", "d×1"}, got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	// A call five half-lives old goes before a fresh one, though made
	// twice.
	m = newMemory(t, &usage.Options{MaxCalls: 2, HalfLife: time.Hour})
	record(t, m, alice, r(1), "a", t0)
	record(t, m, alice, r(1), "a", t0)
	record(t, m, alice, r(2), "b", t0.Add(5*time.Hour))
	record(t, m, alice, r(3), "c", t0.Add(5*time.Hour))
	got = got[:0]
	for e := range m.Entries("team") {
		got = append(got, e.Tool)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"b", "c"}, got); diff != "" {
		t.Errorf("kept after five half-lives (-want +got):\n%s", diff)
	}

	small := newMemory(t, &usage.Options{MaxBytes: 2000})
	for i := range 20 {
		record(t, small, alice, req(fmt.Sprintf("request %d", i), topic(i)), fmt.Sprintf("tool_%d", i), t0.Add(time.Duration(i)*time.Minute))
	}
	if n := len(small.Marshal("team")); n > 2000 {
		t.Errorf("MaxBytes 2000: the scope marshals to %d bytes", n)
	}
	kept := entries(small, "team")
	has := func(tool string) bool {
		return slices.ContainsFunc(kept, func(e usage.Entry) bool { return e.Tool == tool })
	}
	if len(kept) == 0 || len(kept) == 20 || has("tool_0") || !has("tool_19") {
		t.Errorf("MaxBytes 2000 kept %d calls, want some, the oldest gone and the newest kept: %v", len(kept), kept)
	}
}

// Marshal and Merge: a scope's bytes merged into an empty Memory give the
// same bytes; merging twice changes nothing; merging two replicas' states
// in either order gives the same scope.
func TestMarshalMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(m *usage.Memory, who string, n int) {
		for i := range n {
			v := make([]float32, dim)
			for j := range v {
				v[j] = float32(rng.NormFloat64())
			}
			record(t, m, usage.Caller{Scope: "team", Identity: who}, req(fmt.Sprintf("request %s %d", who, i%5), unit(v)), fmt.Sprintf("tool_%d", i%4), t0.Add(time.Duration(i)*time.Second))
		}
	}
	a, b := newMemory(t, &usage.Options{KeepText: true}), newMemory(t, &usage.Options{KeepText: true})
	fill(a, "alice", 30)
	fill(b, "bob", 30)
	data := a.Marshal("team")
	c := newMemory(t, &usage.Options{KeepText: true})
	if err := c.Merge("team", data); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Marshal("team"), data) {
		t.Error("a scope merged into an empty memory marshals differently")
	}
	if err := c.Merge("team", data); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Marshal("team"), data) {
		t.Error("merging the same scope twice changed it")
	}
	ab, ba := newMemory(t, &usage.Options{KeepText: true}), newMemory(t, &usage.Options{KeepText: true})
	for _, step := range []struct {
		m    *usage.Memory
		data []byte
	}{{ab, a.Marshal("team")}, {ab, b.Marshal("team")}, {ba, b.Marshal("team")}, {ba, a.Marshal("team")}} {
		if err := step.m.Merge("team", step.data); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(ab.Marshal("team"), ba.Marshal("team")) {
		t.Error("merging in two orders gave two scopes")
	}
	if n := len(entries(ab, "team")); n != len(entries(a, "team"))+len(entries(b, "team")) {
		t.Errorf("merged %d calls, want %d", n, len(entries(a, "team"))+len(entries(b, "team")))
	}
	// Votes survive the round trip.
	q := usage.Request{Vector: unit(slices.Repeat([]float32{1}, dim)), Terms: terms("request alice 3")}
	if diff := cmp.Diff(a.Votes(alice, usage.Query{Request: q, Valid: current}), c.Votes(alice, usage.Query{Request: q, Valid: current})); diff != "" {
		t.Errorf("votes after a round trip (-before +after):\n%s", diff)
	}
	// An empty scope marshals to a value that merges to nothing.
	if err := c.Merge("empty", newMemory(t, nil).Marshal("none")); err != nil || slices.Contains(c.Scopes(), "empty") {
		t.Errorf("merging an empty scope: %v, scopes %v", err, c.Scopes())
	}
}

func TestMergeBadData(t *testing.T) {
	m := newMemory(t, nil)
	record(t, m, alice, req("add 2 and 3", topic(1)), "get-sum", t0)
	good := m.Marshal("team")
	flip := func(i int) []byte {
		b := slices.Clone(good)
		b[i] ^= 0xff
		return b
	}
	for name, data := range map[string][]byte{
		"empty":     nil,
		"magic":     flip(0),
		"version":   flip(7),
		"checksum":  flip(len(good) - 1),
		"body":      flip(len(good) / 2),
		"truncated": good[:len(good)-5],
		"json":      []byte(`{"calls":[]}`),
	} {
		fresh := newMemory(t, nil)
		if err := fresh.Merge("team", data); !errors.Is(err, usage.ErrFormat) {
			t.Errorf("%s: Merge = %v, want ErrFormat", name, err)
		}
		if len(fresh.Scopes()) != 0 {
			t.Errorf("%s: a failed merge left scopes %v", name, fresh.Scopes())
		}
	}
}

// Texts are kept only with KeepText; Forget drops what it matches.
func TestEntriesForget(t *testing.T) {
	for _, keep := range []bool{false, true} {
		m := newMemory(t, &usage.Options{KeepText: keep})
		record(t, m, alice, req("add 2 and 3", topic(1)), "get-sum", t0)
		record(t, m, usage.Caller{Scope: "team", Identity: "bob"}, req("read notes.txt", topic(2)), "read_file", t0.Add(time.Hour))
		record(t, m, usage.Caller{Scope: "team", Identity: "bob"}, req("add 2 and 3", topic(1)), "get-sum", t0.Add(2*time.Hour))
		es := entries(m, "team")
		if len(es) != 3 {
			t.Fatalf("keep %v: %d entries, want 3", keep, len(es))
		}
		for _, e := range es {
			if (e.Text != "") != keep {
				t.Errorf("keep %v: entry text %q", keep, e.Text)
			}
			if e.Count != 1 || e.First.IsZero() || e.Last.Before(e.First) || e.Hash != "h-"+e.Tool {
				t.Errorf("entry %+v", e)
			}
		}
		if n := m.Forget("team", func(e usage.Entry) bool { return e.Identity == "bob" && e.Tool == "get-sum" }); n != 1 {
			t.Errorf("Forget bob's get-sum: %d", n)
		}
		if n := m.Forget("team", func(e usage.Entry) bool { return e.Last.Before(t0.Add(30 * time.Minute)) }); n != 1 {
			t.Errorf("Forget the calls older than 30 minutes: %d", n)
		}
		if es := entries(m, "team"); len(es) != 1 || es[0].Tool != "read_file" {
			t.Errorf("left %+v, want bob's read_file", es)
		}
		if n := m.Forget("team", nil); n != 1 || len(m.Scopes()) != 0 {
			t.Errorf("Forget all: %d, scopes %v", n, m.Scopes())
		}
	}
}

// Two requests that share no word vote by their vectors alone only while
// one of them is short: long requests have words enough to compare, and
// two long ones whose vectors are as close as a paraphrase's but that
// share no word are different asks in one template.
func TestVotesLongRequestsNeedWords(t *testing.T) {
	m := newMemory(t, nil)
	background(t, m, alice, 30)
	long := "summarize quarterly revenue report for emea sales region today"
	short := "rotate keys"
	record(t, m, alice, req(long, mix(60, 1, 61, 0.6)), "summarize_report", t0)
	record(t, m, alice, req(short, mix(62, 1, 63, 0.6)), "rotate_credentials", t0)
	// Vectors at a cosine of about 0.9, no word in common: the mixed
	// similarity is half the cosine, under the floor (0.5), so only the
	// vectors-alone path could vote.
	longQ := usage.Query{Request: req("translate monthly expense sheet into german finance department files", mix(60, 1, 61, 0.1)), Valid: current}
	shortQ := usage.Query{Request: req("cycle secrets", mix(62, 1, 63, 0.1)), Valid: current}
	if got := m.Votes(alice, longQ); len(got) != 0 {
		t.Errorf("a long request that shares no word with a long earlier one got votes %+v", got)
	}
	if v := votesFor(m.Votes(alice, shortQ), "rotate_credentials"); v.Weight < 0.5 || v.Similarity >= 0.5 {
		t.Errorf("a short paraphrase with no word in common got %+v for rotate_credentials: want a weight of at least 0.5 by its vectors alone (a mixed similarity under 0.5)", v)
	}
	// A long request against a short one is still compared by vectors.
	mixedQ := usage.Query{Request: req("please rotate the credentials of our production database cluster tonight", mix(62, 1, 63, 0.1)), Valid: current}
	if v := votesFor(m.Votes(alice, mixedQ), "rotate_credentials"); v.Weight < 0.5 {
		t.Errorf("a long request like a short earlier one got no vote for rotate_credentials: %+v", m.Votes(alice, mixedQ))
	}
}

// Requests with no vector are compared by their terms.
func TestVotesTermsOnly(t *testing.T) {
	m := newMemory(t, nil)
	for i := range 30 {
		record(t, m, alice, usage.Request{Terms: terms(fmt.Sprintf("chore%d task%d", i, i))}, fmt.Sprintf("chore_%d", i), t0)
	}
	record(t, m, alice, usage.Request{Terms: terms("deploy staging application")}, "deploy", t0)
	votes := m.Votes(alice, usage.Query{Request: usage.Request{Terms: terms("deploy the staging application now")}, Valid: current})
	if len(votes) == 0 || votes[0].Tool != "deploy" {
		t.Errorf("votes %+v, want deploy first", votes)
	}
}

// A request that led to several tools votes by the share of them that the
// ranking found too (Query.Ranked): like this one in one of its asks, it
// does not lift the tools of its others as far. A request of one call
// votes whatever the ranking found.
func TestVotesAgreement(t *testing.T) {
	m := newMemory(t, nil)
	background(t, m, alice, 30)
	r := req("calculate the stress strain curve then get the chemical properties then analyse the time series", mix(10, 1, 11, 0.3))
	for _, tool := range []string{"stress_strain", "chemical_properties", "time_series"} {
		record(t, m, alice, r, tool, t0)
	}
	record(t, m, alice, req("draw the sales chart", mix(12, 1, 13, 0.3)), "chart", t0)
	q := usage.Query{Request: req("calculate the stress strain curve of graphene", mix(10, 1, 14, 0.3)), Valid: current}
	all := q
	all.Ranked = []string{"stress_strain", "chemical_properties", "time_series"}
	one := q
	one.Ranked = []string{"stress_strain", "unrelated"}
	wAll, wOne := votesFor(m.Votes(alice, all), "chemical_properties").Weight, votesFor(m.Votes(alice, one), "chemical_properties").Weight
	// A third of the evidence, and the weight saturates: well under.
	if wAll == 0 || wOne >= 0.6*wAll {
		t.Errorf("chemical_properties' weight %.3f with all three ranked, %.3f with one of three: want it well under", wAll, wOne)
	}
	c := usage.Query{Request: req("plot the sales chart", mix(12, 1, 15, 0.3)), Valid: current}
	w0 := votesFor(m.Votes(alice, c), "chart").Weight
	c.Ranked = []string{"unrelated"}
	if w1 := votesFor(m.Votes(alice, c), "chart").Weight; w0 == 0 || w1 != w0 {
		t.Errorf("a request of one call voted %.3f without a ranking, %.3f with one that lacks it: want the same", w0, w1)
	}
}

// A Memory is safe for concurrent use: calls recorded, merged and
// forgotten while others vote and marshal.
func TestConcurrent(t *testing.T) {
	m := newMemory(t, &usage.Options{MaxCalls: 64})
	other := newMemory(t, nil)
	background(t, other, alice, 10)
	data := other.Marshal("team")
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				r := req(fmt.Sprintf("request %d %d", g, i%17), mix(float64(i%30), 1, float64(30+g), 0.5))
				switch i % 5 {
				case 0:
					_ = m.Merge("team", data)
				case 1:
					m.Votes(alice, usage.Query{Request: r})
				case 2:
					_ = m.Marshal("team")
				case 3:
					m.Forget("team", func(e usage.Entry) bool { return e.Tool == "tool_3" })
				default:
					if err := m.Record(usage.Event{Caller: alice, Request: r, Tool: fmt.Sprintf("tool_%d", i%7), Hash: "h", Time: t0.Add(time.Duration(i) * time.Second)}); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	if n := len(entries(m, "team")); n > 64 {
		t.Errorf("%d calls kept, over MaxCalls 64", n)
	}
}

// Replace takes a stored scope as the truth: what the memory held before
// is gone (a forget elsewhere reaches it), other scopes stay, and bad data
// changes nothing.
func TestReplace(t *testing.T) {
	stored := newMemory(t, nil)
	record(t, stored, alice, req("add 2 and 3", topic(1)), "get-sum", t0)
	m := newMemory(t, nil)
	record(t, m, alice, req("weather in Paris", topic(2)), "get-weather", t0)
	record(t, m, usage.Caller{Scope: "other", Identity: "bob"}, req("list files", topic(3)), "list-files", t0)
	if err := m.Replace("team", stored.Marshal("team")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Marshal("team"), stored.Marshal("team")) {
		t.Errorf("after Replace the scope holds %v, want the stored %v", entries(m, "team"), entries(stored, "team"))
	}
	if n := len(entries(m, "other")); n != 1 || m.Calls("other") != 1 || m.Calls("team") != 1 || m.Calls("none") != 0 {
		t.Errorf("Replace of team changed scope other: %d calls; Calls: team %d, other %d, none %d; want 1, 1, 1, 0", n, m.Calls("team"), m.Calls("other"), m.Calls("none"))
	}
	before := m.Marshal("team")
	if err := m.Replace("team", []byte("not a scope")); !errors.Is(err, usage.ErrFormat) {
		t.Errorf("Replace with bad data = %v, want ErrFormat", err)
	}
	if !bytes.Equal(m.Marshal("team"), before) {
		t.Error("a failed Replace changed the scope")
	}
	if err := m.Replace("team", nil); err != nil || slices.Contains(m.Scopes(), "team") {
		t.Errorf("Replace with nothing: %v, scopes %v", err, m.Scopes())
	}
}

// An earlier request that asked to do what its tool's name says votes for
// it in a request that asks for the same action, or names none, and not
// in one that asks for another only, however close their vectors; one
// that named no action votes whatever the new request asks.
func TestVotesActions(t *testing.T) {
	m := newMemory(t, nil)
	background(t, m, alice, 30)
	// Vectors of the table's topic (50), close whatever the action.
	record(t, m, alice, req("add a column to my airtable table", mix(50, 1, 51, 0.3)), "airtable__create_field", t0)
	record(t, m, alice, req("my crm contacts table columns", mix(52, 1, 53, 0.3)), "crm__create_field", t0)
	for _, c := range []struct {
		request, tool string
		vote          bool
	}{
		{"show the rows in my airtable table", "airtable__create_field", false},
		{"add a due date column to my airtable table", "airtable__create_field", true},
		{"a due date column in my airtable table", "airtable__create_field", true},
		{"show or add columns of my airtable table", "airtable__create_field", true},
		// The earlier request named no action: it votes.
		{"show the columns of my crm contacts table", "crm__create_field", true},
	} {
		vec := mix(50, 1, 51, 0.35)
		if strings.HasPrefix(c.tool, "crm") {
			vec = mix(52, 1, 53, 0.35)
		}
		v := votesFor(m.Votes(alice, usage.Query{Request: req(c.request, vec), Valid: current}), c.tool)
		if got := v.Weight > 0; got != c.vote {
			t.Errorf("%q: vote for %s %+v, want a vote %v", c.request, c.tool, v, c.vote)
		}
	}
	// Off: the other action votes too.
	off := usage.Options{}
	usageopt.Set(&off, func() usageopt.Tuning { tu := usageopt.Default(); tu.Actions = false; return tu }())
	m2 := newMemory(t, &off)
	background(t, m2, alice, 30)
	record(t, m2, alice, req("add a column to my airtable table", mix(50, 1, 51, 0.3)), "airtable__create_field", t0)
	if v := votesFor(m2.Votes(alice, usage.Query{Request: req("show the rows in my airtable table", mix(50, 1, 51, 0.35)), Valid: current}), "airtable__create_field"); v.Weight <= 0 {
		t.Errorf("without the actions rule, no vote for the other action's tool: %+v", v)
	}
}
