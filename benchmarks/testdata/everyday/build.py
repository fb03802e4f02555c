"""Compiles src.py into reference/queries.jsonl and catalog/queries.jsonl, and
heldout/src.py into heldout/reference/queries.jsonl and
heldout/catalog/queries.jsonl, and checks every gold name against its catalog.
reference/tools.jsonl is the reference servers' tools/list (see README.md);
both sets use it. The catalog check needs TOOLSIFT_SHARED (the folder holding
mcp/catalog.jsonl). Run from this folder."""
import importlib.util, json, os
import src

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
            assert len(set(gold)) == len(gold), (path, q, "gold name listed twice")
            for g in gold:
                assert g in known, (path, q, g)
            f.write(json.dumps({"id": "%s-%03d" % (prefix, i), "query": q, "gold": gold,
                                "gold_groups": [gold]}) + "\n")

def build(folder, prefix, s, catalog):
    reference = names("reference/tools.jsonl", False)
    write(os.path.join(folder, "reference", "queries.jsonl"), prefix + "ref", s.REFERENCE, reference)
    drawn = [json.loads(l)["tool"] for l in open(os.path.join(folder, "catalog", "drawn.jsonl"))]
    assert drawn == [t for t, _, _ in s.CATALOG], "catalog requests are not in draw order"
    write(os.path.join(folder, "catalog", "queries.jsonl"), prefix + "cat", s.CATALOG, catalog)
    print("%s: %d reference and %d catalog requests" % (folder or "first set", len(s.REFERENCE), len(s.CATALOG)))
    return reference

shared = os.environ.get("TOOLSIFT_SHARED", "../../../../shared")
catalog = names(os.path.join(shared, "mcp", "catalog.jsonl"), True)
reference_first = build("", "", src, catalog)

spec = importlib.util.spec_from_file_location("heldout_src", os.path.join("heldout", "src.py"))
held = importlib.util.module_from_spec(spec)
spec.loader.exec_module(held)
reference = build("heldout", "h", held, catalog)
missing = reference - {t for t, _, _ in held.REFERENCE}
assert not missing, ("held-out reference requests leave tools uncovered", sorted(missing))

# The repeated-request variant (repeat/): every request of the first set, then
# its two new wordings (repeat/src.py), the same gold; ids NNN, NNN.2, NNN.3.
spec = importlib.util.spec_from_file_location("repeat_src", os.path.join("repeat", "src.py"))
rep = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rep)
for kind, entries, again, known in (("reference", src.REFERENCE, rep.REFERENCE, reference_first),
                                    ("catalog", src.CATALOG, rep.CATALOG, catalog)):
    assert len(entries) == len(again), (kind, "repeat/src.py has %d needs, src.py %d" % (len(again), len(entries)))
    prefix = "ref" if kind == "reference" else "cat"
    os.makedirs(os.path.join("repeat", kind), exist_ok=True)
    with open(os.path.join("repeat", kind, "queries.jsonl"), "w") as f:
        for i, ((tool, q, alt), words) in enumerate(zip(entries, again), 1):
            gold = [tool] + [a for a in alt if a != tool]
            assert len(words) == 2 and q not in words and words[0] != words[1], (kind, q, "want two new wordings")
            for g in gold:
                assert g in known, (kind, q, g)
            for j, text in enumerate((q,) + tuple(words), 1):
                qid = "%s-%03d" % (prefix, i) + ("" if j == 1 else ".%d" % j)
                f.write(json.dumps({"id": qid, "query": text, "gold": gold, "gold_groups": [gold]}) + "\n")
    print("repeat/%s: %d needs, %d requests" % (kind, len(entries), 3 * len(entries)))

# The held-out set's reference requests, repeated (repeat/heldout/): each
# held-out need, then its two new wordings; ids href-NNN, href-NNN.2, .3.
spec = importlib.util.spec_from_file_location("repeat_heldout_src", os.path.join("repeat", "heldout", "src.py"))
rep_held = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rep_held)
assert len(held.REFERENCE) == len(rep_held.REFERENCE), "repeat/heldout/src.py has %d needs, heldout/src.py %d" % (len(rep_held.REFERENCE), len(held.REFERENCE))
os.makedirs(os.path.join("repeat", "heldout", "reference"), exist_ok=True)
with open(os.path.join("repeat", "heldout", "reference", "queries.jsonl"), "w") as f:
    for i, ((tool, q, alt), words) in enumerate(zip(held.REFERENCE, rep_held.REFERENCE), 1):
        gold = [tool] + [a for a in alt if a != tool]
        assert len(words) == 2 and q not in words and words[0] != words[1], ("repeat/heldout", q, "want two new wordings")
        for g in gold:
            assert g in reference, ("repeat/heldout", q, g)
        for j, text in enumerate((q,) + tuple(words), 1):
            qid = "href-%03d" % i + ("" if j == 1 else ".%d" % j)
            f.write(json.dumps({"id": qid, "query": text, "gold": gold, "gold_groups": [gold]}) + "\n")
print("repeat/heldout/reference: %d needs, %d requests" % (len(held.REFERENCE), 3 * len(held.REFERENCE)))
