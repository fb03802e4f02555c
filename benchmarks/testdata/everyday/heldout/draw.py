"""The seeded draw behind heldout/catalog/queries.jsonl: two tools per server
of the 73-server catalog (one for one-tool servers), uniformly within each
server, among the tools the first draw (../catalog/drawn.jsonl) did not take;
a server whose every tool the first draw took (the one- and two-tool servers)
is drawn from all its tools again. Run from this folder:
TOOLSIFT_SHARED=/path/to/shared python3 draw.py > catalog/drawn.jsonl"""
import json, os, random, collections
path = os.path.join(os.environ.get("TOOLSIFT_SHARED", "../../../../../shared"), "mcp", "catalog.jsonl")
first = {json.loads(l)["tool"] for l in open(os.path.join("..", "catalog", "drawn.jsonl"))}
by = collections.defaultdict(list)
for line in open(path):
    t = json.loads(line)
    by[t["server"]].append(t["name"])
rng = random.Random(20261127)
for server in sorted(by):
    pool = sorted(n for n in by[server] if server + "__" + n not in first) or sorted(by[server])
    for name in rng.sample(pool, min(2, len(pool))):
        print(json.dumps({"tool": server + "__" + name}))
