#!/usr/bin/env python3
"""Seeded draw of the tools the multi-intent queries are written for.

Run: python3 sample_multi.py   (writes multi/drawn.jsonl)

MCP catalog only. 40 positions: the first 28 ask two things, the last 12
three. For each position, distinct servers are drawn uniformly from the 73
(without replacement within the position), then one tool uniformly from each
server's tools not drawn before (a server whose tools are all drawn is
drawn again). The tools were drawn,
and every query written, before any ranking was run on them.
"""
import json, random, collections, os
SHARED = os.environ.get("TOOLSIFT_SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../shared"))

SEED = 20261124
HERE = os.path.dirname(os.path.abspath(__file__))
MCP = os.path.join(SHARED, "mcp/catalog.jsonl")
N_TWO, N_THREE = 28, 12


def main():
    by = collections.defaultdict(list)
    for l in open(MCP):
        t = json.loads(l)
        by[t["server"]].append(t["server"] + "__" + t["name"])
    servers = sorted(by)
    rng = random.Random(SEED)
    seen = set()
    out = []
    for pos in range(1, N_TWO + N_THREE + 1):
        n = 2 if pos <= N_TWO else 3
        while True:
            picked = rng.sample(servers, n)
            if all(set(by[s]) - seen for s in picked):
                break
        tools = []
        for s in picked:
            t = rng.choice(sorted(set(by[s]) - seen))
            seen.add(t)
            tools.append(t)
        out.append({"pos": pos, "tools": tools})
    with open(os.path.join(HERE, "multi/drawn.jsonl"), "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
