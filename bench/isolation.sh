#!/usr/bin/env bash
# Start-up cost of running /bin/true under agentbox and its peers, side by side in one
# hyperfine run: plain fork+exec, unshare, bubblewrap (agent profile), agentbox at the
# process and namespace levels. Prints medians and ratios to fork+exec; the raw JSON goes
# to bench/out/. Needs root (or user namespaces), hyperfine and bubblewrap:
#   apt-get install -y hyperfine bubblewrap
# Usage: bench/isolation.sh [runs-per-round] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-200}"
rounds="${2:-3}"
for tool in hyperfine bwrap unshare; do
	command -v "$tool" >/dev/null || { echo "bench/isolation.sh: $tool is missing: apt-get install -y hyperfine bubblewrap util-linux" >&2; exit 1; }
done
mkdir -p bench/out
go build -o bench/out/agentbox ./cmd/agentbox
ab="$PWD/bench/out/agentbox"
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
echo hello > "$ws/file"

# The system directories bubblewrap binds, as this host lays them out (merged /usr or not).
bw=(bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr)
for d in bin sbin lib lib64; do
	if [ -L "/$d" ]; then bw+=(--symlink "$(readlink "/$d")" "/$d"); elif [ -d "/$d" ]; then bw+=(--ro-bind "/$d" "/$d"); fi
done
bw+=(--proc /proc --dev /dev --tmpfs /tmp --bind "$ws" /workspace --chdir /workspace /bin/true)

names=("fork+exec" "unshare -Urpf --mount-proc" "bubblewrap --unshare-all" "agentbox --isolation process" "agentbox --isolation namespace")
cmds=("/bin/true"
	"unshare -Urpf --mount-proc /bin/true"
	"${bw[*]}"
	"$ab run --isolation process --workspace $ws -- /bin/true"
	"$ab run --isolation namespace --workspace $ws -- /bin/true")

for r in $(seq 1 "$rounds"); do
	args=()
	for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
	hyperfine -N --warmup 20 --runs "$runs" --style none --export-json "bench/out/isolation-$r.json" "${args[@]}" >/dev/null
done

python3 - "$rounds" <<'PY'
import json, statistics, sys
rounds = int(sys.argv[1])
times = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"bench/out/isolation-{r}.json"))["results"]:
        times.setdefault(res["command"], []).extend(res["times"])
base = statistics.median(times["fork+exec"])
print(f"{'running /bin/true':34} {'median ms':>10} {'p90 ms':>8} {'x fork+exec':>12}")
for name, ts in times.items():
    ts = sorted(ts)
    med = statistics.median(ts)
    print(f"{name:34} {med*1000:10.2f} {ts[int(len(ts)*0.9)]*1000:8.2f} {med/base:12.2f}")
PY

echo
echo "where agentbox's namespace start-up goes (median ms per phase, sandbox package, /bin/true):"
CGO_ENABLED=0 go test -run '^$' -bench 'BenchmarkTrue' -benchtime 40x ./internal/sandbox/ | awk '/^BenchmarkTrue/ {
	printf "%s\n", $1
	for (i = 5; i < NF; i += 2) printf "  %-22s %8s\n", $(i+1), $i
}'
