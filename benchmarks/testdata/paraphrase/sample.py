#!/usr/bin/env python3
"""Seeded draw of the tools the paraphrase queries are written for.

Run: python3 sample.py   (writes mcp/drawn.jsonl and bfcl/drawn.jsonl)

MCP (catalog 1): servers in a seeded random order; each server's tools in a
seeded random order (uniform within a server); round-robin over servers, one
tool per server per pass, at most 6 per server, until 250 tools. Then 15% of
the positions (38, among servers with >= 2 tools) are made two-step; their
second tool is drawn uniformly from the same server's tools that were not
already drawn (falling back to any other tool of the server).

BFCL (catalog 2): the whole catalog in a seeded random order; the first 150
kept tools. 10% of positions (15) are made two-step; the second tool is drawn
uniformly from tools sharing the first tool's dotted prefix (e.g. `math.`),
excluding its own same-name variants, or else uniformly from the catalog.

A drawn tool is skipped only if its description is empty or meaningless
(SKIP below, with reasons); the next tool of the same list is drawn instead.
"""
import json, random, collections, os
# ../shared beside the repository (or $TOOLSIFT_SHARED).
SHARED = os.environ.get("TOOLSIFT_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../shared"))


SEED = 20250611
HERE = os.path.dirname(os.path.abspath(__file__))
MCP = os.path.join(SHARED, "mcp/catalog.jsonl")
BFCL = os.path.join(SHARED, "datasets/bfcl/tools.jsonl")
N_MCP, N_BFCL = 250, 150
PER_SERVER = 6
TWO_MCP, TWO_BFCL = 38, 15

# qualified name -> reason (filled in after inspecting the draw)
SKIP = {
    "default_function__v4": "bfcl: description is 'This function serves as a placeholder and does not perform any operations.' - nothing a user could ask for",
}

def base(name):
    return name.split("__v")[0] if "__v" in name else name

def mcp():
    tools = [json.loads(l) for l in open(MCP)]
    by = collections.defaultdict(list)
    for t in tools:
        by[t["server"]].append(t["server"] + "__" + t["name"])
    rng = random.Random(SEED)
    servers = sorted(by)
    rng.shuffle(servers)
    order = {}
    for s in servers:
        lst = sorted(by[s])
        rng.shuffle(lst)
        order[s] = lst
    pos = {s: 0 for s in servers}
    taken = {s: 0 for s in servers}
    drawn, skipped = [], []
    while len(drawn) < N_MCP:
        progress = False
        for s in servers:
            if len(drawn) >= N_MCP:
                break
            if taken[s] >= PER_SERVER:
                continue
            while pos[s] < len(order[s]):
                q = order[s][pos[s]]
                pos[s] += 1
                if q in SKIP:
                    skipped.append((q, SKIP[q]))
                    continue
                drawn.append(q)
                taken[s] += 1
                progress = True
                break
        if not progress:
            raise SystemExit("catalog exhausted")
    rng2 = random.Random(SEED + 1)
    srv = lambda q: q.split("__", 1)[0]
    eligible = [i for i, q in enumerate(drawn) if len(by[srv(q)]) >= 2]
    two = set(rng2.sample(eligible, TWO_MCP))
    used = set(drawn)
    out = []
    for i, q in enumerate(drawn):
        rec = {"pos": i + 1, "tools": [q]}
        if i in two:
            s = srv(q)
            cands = sorted(t for t in by[s] if t not in used and t not in SKIP)
            if not cands:
                cands = sorted(t for t in by[s] if t != q and t not in SKIP)
            second = rng2.choice(cands)
            used.add(second)
            rec["tools"].append(second)
        out.append(rec)
    return out, skipped

def bfcl():
    tools = [json.loads(l)["name"] for l in open(BFCL)]
    rng = random.Random(SEED + 2)
    order = sorted(tools)
    rng.shuffle(order)
    drawn, skipped = [], []
    for q in order:
        if len(drawn) >= N_BFCL:
            break
        if q in SKIP:
            skipped.append((q, SKIP[q])); continue
        drawn.append(q)
    rng2 = random.Random(SEED + 3)
    two = set(rng2.sample(range(N_BFCL), TWO_BFCL))
    used = set(drawn)
    out = []
    for i, q in enumerate(drawn):
        rec = {"pos": i + 1, "tools": [q]}
        if i in two:
            pre = q.split(".")[0] if "." in q else None
            cands = []
            if pre:
                cands = sorted(t for t in tools if "." in t and t.split(".")[0] == pre
                               and base(t) != base(q) and t not in used and t not in SKIP)
            if not cands:
                cands = sorted(t for t in tools if base(t) != base(q) and t not in used and t not in SKIP)
            second = rng2.choice(cands)
            used.add(second)
            rec["tools"].append(second)
        out.append(rec)
    return out, skipped

if __name__ == "__main__":
    for name, fn in (("mcp", mcp), ("bfcl", bfcl)):
        out, skipped = fn()
        with open(os.path.join(HERE, name, "drawn.jsonl"), "w") as f:
            for r in out:
                f.write(json.dumps(r) + "\n")
        print(name, len(out), "drawn,", sum(len(r["tools"]) == 2 for r in out), "two-step,",
              len(skipped), "skipped")
        for q, why in skipped:
            print("  skipped", q, "-", why)
