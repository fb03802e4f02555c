#!/usr/bin/env bash
# Measures lazy start on the real catalog (shared/mcp, 73 npm servers):
# `toolbench run` on a one-tool task against a scripted model
# (benchmarks/scriptedmodel), three ways: cold (empty tool-list cache),
# warm (the cache the cold run wrote) and eager (--eager, warm cache).
# For each: wall time from start to the first model request, total time,
# node processes started, and the peak RSS of the whole process tree
# (toolbench and every child, summed, sampled every 100 ms).
#
# Install the catalog as its README says, then run inside a loopback-only
# network namespace:
#   unshare --net --fork sh -c 'ip link set lo up && exec bash benchmarks/lazystart.sh ../shared/mcp'
# (the servers run with HOME=<catalog>/home, as the catalog's README says).
set -euo pipefail
cd "$(dirname "$0")/.."
catalog=$(cd "${1:-../shared/mcp}" && pwd)
tool=${TOOL:-memory__read_graph}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/toolbench" ./cmd/toolbench
go build -o "$work/scriptedmodel" ./benchmarks/scriptedmodel
cache="$work/cache"

# tree_sample PID: prints "RSS_KB NODE_PIDS..." for PID and its descendants.
tree_sample() {
  ps -e -o pid=,ppid=,rss=,comm= | awk -v root="$1" '
    { pid[NR]=$1; ppid[NR]=$2; rss[NR]=$3; comm[NR]=$4; n=NR }
    END {
      inTree[root]=1; changed=1
      while (changed) { changed=0; for (i=1;i<=n;i++) if (!(pid[i] in inTree) && (ppid[i] in inTree)) { inTree[pid[i]]=1; changed=1 } }
      total=0; nodes=""
      for (i=1;i<=n;i++) if (pid[i] in inTree) { total+=rss[i]; if (comm[i]=="node" || comm[i] ~ /^MainThread/) nodes=nodes" "pid[i] }
      print total nodes
    }'
}

run_once() {
  local label=$1; shift
  rm -f "$work/url"
  "$work/scriptedmodel" --call "$tool" > "$work/url" 2> "$work/model.err" &
  local model=$!
  while [ ! -s "$work/url" ]; do sleep 0.05; done
  local url; url=$(cat "$work/url")
  local t0; t0=$(date +%s%3N)
  HOME="$catalog/home" "$work/toolbench" run --config "$catalog/servers.json" --base-url "$url" --model scripted \
    --max-steps 3 --cache-dir "$cache" "$@" "Read the whole knowledge graph." > "$work/out" 2> "$work/err" &
  local pid=$! peak=0
  declare -A seen=()
  while kill -0 "$pid" 2>/dev/null; do
    read -r rss nodes <<< "$(tree_sample "$pid") "
    [ "${rss:-0}" -gt "$peak" ] && peak=$rss
    for p in $nodes; do seen[$p]=1; done
    sleep 0.1
  done
  wait "$pid" || { echo "$label: toolbench failed"; cat "$work/err"; }
  local t1; t1=$(date +%s%3N)
  local first; first=$(awk '/first request at/ {print $4}' "$work/model.err")
  kill "$model"; wait "$model" 2>/dev/null || true
  printf '%-6s first request %6s ms  total %6s ms  node processes %3d  peak tree RSS %6d MB  %s\n' \
    "$label" "$(( ${first:-t1} - t0 ))" "$(( t1 - t0 ))" "${#seen[@]}" "$(( peak / 1024 ))" \
    "$(grep -m1 -A1 '^answer:' "$work/out" | tail -1 | cut -c1-60)"
}

run_once cold
run_once warm
run_once eager --eager
