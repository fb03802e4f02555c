#!/usr/bin/env python3
"""Validate mcp/queries.jsonl and bfcl/queries.jsonl on their own (no dependency on src/).

Checks: valid JSON lines with id/query/gold/gold_groups; ids unique and sequential (mcp-0001.., bfcl-0001..);
>= 1 group per query, no empty group, no name twice in a group; gold == the groups' names in order, deduplicated;
every name exists in its catalog (MCP names qualified <server>__<name>); no duplicate query texts; every drawn
tool (drawn.jsonl) is in the query's groups. Prints the statistics quoted in README.md.
"""
import json, os, re, sys, collections
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from build import toks, stem  # same tokenizer / stopwords as the build step
# ../shared beside the repository (or $TOOLSIFT_SHARED).
SHARED = os.environ.get("TOOLSIFT_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../shared"))


def check(which, catalog, qualify, n_expected):
    names = set()
    for l in open(catalog):
        t = json.loads(l); names.add(t["server"] + "__" + t["name"] if qualify else t["name"])
    drawn = [json.loads(l)["tools"] for l in open(os.path.join(HERE, which, "drawn.jsonl"))]
    rows = [json.loads(l) for l in open(os.path.join(HERE, which, "queries.jsonl"))]
    errs = []
    if len(rows) != n_expected: errs.append(f"{len(rows)} queries, expected {n_expected}")
    seen_q = set()
    st = collections.Counter()
    for i, r in enumerate(rows, 1):
        rid = r.get("id")
        if rid != f"{which}-{i:04d}": errs.append(f"line {i}: id {rid}")
        if set(r) != {"id", "query", "gold", "gold_groups"}: errs.append(f"{rid}: keys {sorted(r)}")
        q = r["query"].strip()
        if not q: errs.append(f"{rid}: empty query")
        if q.lower() in seen_q: errs.append(f"{rid}: duplicate query")
        seen_q.add(q.lower())
        groups = r["gold_groups"]
        if not groups or any(not g for g in groups): errs.append(f"{rid}: missing/empty group")
        flat = []
        for g in groups:
            if len(set(g)) != len(g): errs.append(f"{rid}: name repeated within a group")
            for n in g:
                if n not in names: errs.append(f"{rid}: unknown tool {n}")
                if n not in flat: flat.append(n)
        if r["gold"] != flat: errs.append(f"{rid}: gold != flattened groups")
        d = drawn[i - 1]
        if len(d) != len(groups) or any(not any(t in g for g in groups) for t in d):
            errs.append(f"{rid}: drawn tools {d} not covered")
        # stats
        qs = {stem(w) for w in toks(q)}
        bare = (lambda n: n.split("__", 1)[1]) if qualify else (lambda n: n)
        st["n"] += 1
        st["ov_drawn"] += bool(qs & {stem(w) for n in d for w in toks(bare(n))})
        st["ov_drawn_q"] += bool(qs & {stem(w) for n in d for w in toks(n)})
        st["ov_gold"] += bool(qs & {stem(w) for n in flat for w in toks(bare(n))})
        st["two"] += len(groups) == 2
        nw = len(q.split()); st["short"] += nw <= 10; st["medium"] += 10 < nw <= 30; st["long"] += nw > 30
        st["gsize"] += sum(len(g) for g in groups); st["ng"] += len(groups); st["single"] += all(len(g) == 1 for g in groups)
    for e in errs: print("ERROR", which, e)
    n = st["n"]
    print(f"{which}: {n} queries | two-step {st['two']} ({st['two']/n:.1%}) | short <=10 words {st['short']} ({st['short']/n:.0%}), "
          f"11-30 {st['medium']} ({st['medium']/n:.0%}), >30 {st['long']} ({st['long']/n:.0%}) | groups: mean size "
          f"{st['gsize']/st['ng']:.2f}, queries whose every group is a single tool {st['single']}")
    print(f"  share >=1 non-stopword token (plural-stemmed) with the drawn tool's name: {st['ov_drawn']/n:.3f}"
          + (f" (with the server prefix included: {st['ov_drawn_q']/n:.3f})" if qualify else "")
          + f"; with any gold name: {st['ov_gold']/n:.3f}")
    return not errs

ok = check("mcp", os.path.join(SHARED, "mcp/catalog.jsonl"), True, 250)
ok &= check("bfcl", os.path.join(SHARED, "datasets/bfcl/tools.jsonl"), False, 150)
print("OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
