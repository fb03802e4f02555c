"""Compiles src.py into reference/queries.jsonl and catalog/queries.jsonl and
checks every gold name against its catalog. reference/tools.jsonl is the
reference servers' tools/list (see README.md). The catalog check needs
TOOLSIFT_SHARED (the folder holding mcp/catalog.jsonl)."""
import json, os
from src import REFERENCE, CATALOG

def names(path, qualify):
    out = set()
    for line in open(path):
        t = json.loads(line)
        out.add(t["server"] + "__" + t["name"] if qualify else t["name"])
    return out

def write(path, prefix, entries, known):
    with open(path, "w") as f:
        for i, (tool, q, alt) in enumerate(entries, 1):
            gold = [tool] + [a for a in alt if a != tool]
            for g in gold:
                assert g in known, (path, q, g)
            f.write(json.dumps({"id": "%s-%03d" % (prefix, i), "query": q, "gold": gold,
                                "gold_groups": [gold]}) + "\n")

write("reference/queries.jsonl", "ref", REFERENCE, names("reference/tools.jsonl", False))
shared = os.environ.get("TOOLSIFT_SHARED", "../../../../shared")
drawn = [json.loads(l)["tool"] for l in open("catalog/drawn.jsonl")]
assert drawn == [t for t, _, _ in CATALOG], "catalog requests are not in draw order"
write("catalog/queries.jsonl", "cat", CATALOG, names(os.path.join(shared, "mcp", "catalog.jsonl"), True))
print(len(REFERENCE), "reference and", len(CATALOG), "catalog requests")
