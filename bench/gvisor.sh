#!/usr/bin/env bash
# What the gvisor level costs: /bin/true through bubblewrap (agent profile), agentbox
# at the namespace level, runsc's own `do`, and agentbox at the gvisor level, side by
# side in one hyperfine run; then a syscall-heavy command (100 fork+exec of /bin/true
# in a shell loop) at both agentbox levels, where the Sentry's cost shows. Prints medians and ratios to bubblewrap and to the
# namespace level; the raw JSON goes to bench/out/. Needs root, runsc (see .ci/run),
# hyperfine and bubblewrap:
#   apt-get install -y hyperfine bubblewrap
# Usage: bench/gvisor.sh [runs-per-round] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
rounds="${2:-3}"
for tool in hyperfine bwrap runsc; do
	command -v "$tool" >/dev/null || { echo "bench/gvisor.sh: $tool is missing: apt-get install -y hyperfine bubblewrap; runsc: see .ci/run" >&2; exit 1; }
done
mkdir -p bench/out
CGO_ENABLED=0 go build -o bench/out/agentbox ./cmd/agentbox
ab="$PWD/bench/out/agentbox"
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
echo hello > "$ws/file"

bw=(bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr)
for d in bin sbin lib lib64; do
	if [ -L "/$d" ]; then bw+=(--symlink "$(readlink "/$d")" "/$d"); elif [ -d "/$d" ]; then bw+=(--ro-bind "/$d" "/$d"); fi
done
bw+=(--proc /proc --dev /dev --tmpfs /tmp --bind "$ws" /workspace --chdir /workspace /bin/true)

loop='i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i+1)); done'
names=("bubblewrap --unshare-all" "agentbox --isolation namespace" "runsc do (systrap, no network)" "agentbox --isolation gvisor"
	"namespace: 100 x fork+exec" "gvisor: 100 x fork+exec")
cmds=("${bw[*]}"
	"$ab run --isolation namespace --workspace $ws -- /bin/true"
	"runsc --platform=systrap --network=none --ignore-cgroups do /bin/true"
	"$ab run --isolation gvisor --workspace $ws -- /bin/true"
	"$ab run --isolation namespace --workspace $ws -- /bin/sh -c '$loop'"
	"$ab run --isolation gvisor --workspace $ws -- /bin/sh -c '$loop'")

for r in $(seq 1 "$rounds"); do
	args=()
	for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
	hyperfine -N --warmup 3 --runs "$runs" --style none --export-json "bench/out/gvisor-$r.json" "${args[@]}" >/dev/null
done

python3 - "$rounds" <<'PY'
import json, statistics, sys
rounds = int(sys.argv[1])
times = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"bench/out/gvisor-{r}.json"))["results"]:
        times.setdefault(res["command"], []).extend(res["times"])
bw = statistics.median(times["bubblewrap --unshare-all"])
ns = statistics.median(times["agentbox --isolation namespace"])
print(f"{'running /bin/true':34} {'median ms':>10} {'p90 ms':>8} {'x bwrap':>8} {'x namespace':>12}")
for name, ts in times.items():
    ts = sorted(ts)
    med = statistics.median(ts)
    if name == "namespace: 100 x fork+exec":
        ns = med
    print(f"{name:34} {med*1000:10.1f} {ts[int(len(ts)*0.9)]*1000:8.1f} {med/bw:8.2f} {med/ns:12.2f}")
PY
