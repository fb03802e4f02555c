#!/usr/bin/env python3
"""Compile src/*.py (hand-written queries) into {mcp,bfcl}/queries.jsonl and validate.

Checks: every gold / group name exists in its catalog (qualified <server>__<name> for MCP);
every query has >= 1 group and one group per drawn tool, in draw order, each group containing
its drawn tool; no duplicate ids, queries or names within a group; positions match drawn.jsonl.
Reports the token-overlap statistics quoted in README.md.
"""
import json, os, re, sys, glob, importlib.util, collections
# ../shared beside the repository (or $TOOLSIFT_SHARED).
SHARED = os.environ.get("TOOLSIFT_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../shared"))

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "src"))

STOP = set("""a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself
no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd she'll she's
should shouldn't so some such than that that's the their theirs them themselves then there there's these they
they'd they'll they're they've this those through to too under until up very was wasn't we we'd we'll we're we've
were weren't what what's when when's where where's which while who who's whom why why's with won't would wouldn't
you you'd you'll you're you've your yours yourself yourselves s t d ll m re ve y just also will""".split())

def toks(text):
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text)
    # purely numeric tokens (Music_3_..., __v2 suffixes, values like 2.3.1) and single letters are not words
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) > 1 and not w.isdigit() and w not in STOP]

def stem(w):
    if len(w) > 3 and w.endswith("ies"): return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"): return w[:-1]
    return w

def load_src(prefix):
    rows = []
    for f in sorted(glob.glob(os.path.join(HERE, "src", prefix + "_*.py"))):
        spec = importlib.util.spec_from_file_location(os.path.basename(f)[:-3], f)
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        rows += m.Q
    return rows

def build(which, catalog, qualify, n_expected):
    names = set()
    for l in open(catalog):
        t = json.loads(l)
        names.add(t["server"] + "__" + t["name"] if qualify else t["name"])
    drawn = {r["pos"]: r["tools"] for r in map(json.loads, open(os.path.join(HERE, which, "drawn.jsonl")))}
    rows = sorted(load_src(which), key=lambda r: r[0])
    errs = []
    pos = [r[0] for r in rows]
    if len(set(pos)) != len(pos): errs.append("duplicate positions %s" % [p for p, c in collections.Counter(pos).items() if c > 1])
    missing = sorted(set(drawn) - set(pos))
    if missing: print(f"{which}: not yet written: {len(missing)} (first {missing[:5]})")
    qs = collections.Counter(r[1].strip().lower() for r in rows)
    for q, c in qs.items():
        if c > 1: errs.append("duplicate query text: " + q)
    out, stats = [], collections.Counter()
    overlap_examples = []
    for p, q, groups in rows:
        if p not in drawn: errs.append(f"{p}: not a drawn position"); continue
        d = drawn[p]
        if not groups: errs.append(f"{p}: no groups")
        if len(groups) != len(d): errs.append(f"{p}: {len(groups)} groups for {len(d)} drawn tools")
        for i, g in enumerate(groups):
            if len(set(g)) != len(g): errs.append(f"{p}: duplicate name in group {i}")
            for n in g:
                if n not in names: errs.append(f"{p}: unknown tool {n}")
        # groups are in the natural step order of the request; each drawn tool must sit in its own group
        import itertools
        if len(groups) == len(d) and not any(all(d[j] in groups[k] for j, k in enumerate(perm))
                                             for perm in itertools.permutations(range(len(d)))):
            errs.append(f"{p}: drawn tools {d} not covered one per group")
        gold = []
        for g in groups:
            for n in g:
                if n not in gold: gold.append(n)
        out.append({"id": f"{which}-{p:04d}", "query": q, "gold": gold, "gold_groups": groups})
        # overlap stats
        qt = set(toks(q)); qs_ = {stem(w) for w in qt}
        bare = lambda n: n.split("__", 1)[1] if qualify else n
        drawn_t = set(w for n in d for w in toks(bare(n)))
        drawn_q = set(w for n in d for w in toks(n))  # MCP: with server prefix
        gold_t = set(w for n in gold for w in toks(bare(n)))
        stats["n"] += 1
        stats["drawn_exact"] += bool(qt & drawn_t)
        stats["drawn_stem"] += bool(qs_ & {stem(w) for w in drawn_t})
        stats["drawn_qual_stem"] += bool(qs_ & {stem(w) for w in drawn_q})
        stats["gold_stem"] += bool(qs_ & {stem(w) for w in gold_t})
        if qs_ & {stem(w) for w in drawn_t}:
            overlap_examples.append((p, sorted(qs_ & {stem(w) for w in drawn_t})))
        nw = len(q.split())
        stats["short"] += nw <= 10; stats["medium"] += 10 < nw <= 30; stats["long"] += nw > 30
        stats["two_step"] += len(groups) == 2
        stats["group_size_sum"] += sum(len(g) for g in groups); stats["groups"] += len(groups)
    for e in errs: print("ERROR", which, e)
    with open(os.path.join(HERE, which, "queries.jsonl"), "w") as f:
        for r in out: f.write(json.dumps(r, ensure_ascii=False) + "\n")
    n = stats["n"] or 1
    print(f"{which}: {stats['n']} queries ({n_expected} expected), two-step {stats['two_step']}, "
          f"short(<=10w) {stats['short']}, medium(11-30w) {stats['medium']}, long(>30w) {stats['long']}, "
          f"mean group size {stats['group_size_sum']/max(1,stats['groups']):.2f}")
    print(f"  share >=1 non-stopword token with drawn tool name: exact {stats['drawn_exact']/n:.3f}, "
          f"plural-stemmed {stats['drawn_stem']/n:.3f}"
          + (f", incl. server prefix {stats['drawn_qual_stem']/n:.3f}" if qualify else "")
          + f"; with any gold name (stemmed) {stats['gold_stem']/n:.3f}")
    if "-v" in sys.argv:
        for p, w in overlap_examples: print("   overlap", p, w)
    return not errs

if __name__ == "__main__":
  ok = build("mcp", os.path.join(SHARED, "mcp/catalog.jsonl"), True, 250)
  ok &= build("bfcl", os.path.join(SHARED, "datasets/bfcl/tools.jsonl"), False, 150)
  sys.exit(0 if ok else 1)
