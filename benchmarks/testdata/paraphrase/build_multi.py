#!/usr/bin/env python3
"""Compiles src/multi.py into multi/queries.jsonl, checked against
multi/drawn.jsonl: one query per drawn position, one gold group per drawn
tool (with src/multi.py's EQUIV alternatives)."""
import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "src"))
from multi import Q, EQUIV

drawn = [json.loads(l) for l in open(os.path.join(HERE, "multi/drawn.jsonl"))]
assert sorted(Q) == [r["pos"] for r in drawn], "one query per drawn position"
with open(os.path.join(HERE, "multi/queries.jsonl"), "w") as out:
    for r in drawn:
        groups = [[t] + EQUIV.get(t, []) for t in r["tools"]]
        gold = []
        for g in groups:
            gold += [n for n in g if n not in gold]
        out.write(json.dumps({"id": "multi-%04d" % r["pos"], "query": Q[r["pos"]], "gold": gold, "gold_groups": groups}, ensure_ascii=False) + "\n")
