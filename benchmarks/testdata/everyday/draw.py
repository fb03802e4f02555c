"""The seeded draw behind catalog/queries.jsonl: two tools per server of the
73-server catalog (one for one-tool servers), uniformly within each server.
Run: TOOLSIFT_SHARED=/path/to/shared python3 draw.py > catalog/drawn.jsonl"""
import json, os, random, collections
path = os.path.join(os.environ.get("TOOLSIFT_SHARED", "../../../../shared"), "mcp", "catalog.jsonl")
by = collections.defaultdict(list)
for line in open(path):
    t = json.loads(line)
    by[t["server"]].append(t["name"])
rng = random.Random(20261126)
for server in sorted(by):
    for name in rng.sample(sorted(by[server]), min(2, len(by[server]))):
        print(json.dumps({"tool": server + "__" + name}))
