#!/usr/bin/env bash
# Time of the main job, `agentbox eval` over the built-in suite with the scripted
# policy, in N runs: the median total, and per task the median agent and grade
# times (from each run's report.json). The first run also warms the Go build cache
# unless it is warm already; pass a fresh --go-cache dir through GOCACHE_DIR to
# measure a cold start (reported separately as run 0).
# Usage: bench/eval.sh [runs] [parallel]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-3}"
parallel="${2:-2}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/agentbox" ./cmd/agentbox
cache=(--go-cache "${GOCACHE_DIR:-$HOME/.cache/agentbox/gocache-$(go env GOVERSION)}")
if [ -n "${GOCACHE_DIR:-}" ]; then
	start=$(date +%s.%N)
	"$tmp/agentbox" eval --out "$tmp/run0" --progress none --parallel "$parallel" "${cache[@]}" >/dev/null
	echo "run 0 (cold Go cache): $(echo "$(date +%s.%N) - $start" | bc) s"
fi
for i in $(seq 1 "$runs"); do
	start=$(date +%s.%N)
	"$tmp/agentbox" eval --out "$tmp/run$i" --progress none --parallel "$parallel" "${cache[@]}" >/dev/null
	echo "$(echo "$(date +%s.%N) - $start" | bc)" >> "$tmp/totals"
done
python3 - "$tmp" "$runs" "$parallel" <<'PY'
import json, statistics, sys
tmp, runs, par = sys.argv[1], int(sys.argv[2]), sys.argv[3]
totals = [float(x) for x in open(f"{tmp}/totals")]
per = {}
for i in range(1, runs + 1):
    r = json.load(open(f"{tmp}/run{i}/report.json"))
    for a in r["attempts"]:
        per.setdefault(a["task"], []).append((a["agent_ms"], a["grade_ms"], a["duration_ms"], a["resolved"]))
print(f"agentbox eval (built-in suite, scripted policy, --parallel {par}): median {statistics.median(totals):.1f} s of {runs} runs {sorted(round(t,1) for t in totals)}")
print(f"{'task':6} {'agent ms':>9} {'grade ms':>9} {'attempt ms':>11} resolved")
for t, xs in per.items():
    med = lambda k: statistics.median(x[k] for x in xs)
    print(f"{t:6} {med(0):9.0f} {med(1):9.0f} {med(2):11.0f} {sum(x[3] for x in xs)}/{len(xs)}")
PY
