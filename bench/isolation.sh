#!/usr/bin/env bash
# Start-up cost of running /bin/true under agentbox and its peers, side by side in one
# run: plain fork+exec, unshare, bubblewrap (agent profile), agentbox at the process and
# namespace levels. Latency: hyperfine, all contenders in each round; medians of wall
# time, the mean CPU time (user+sys of the command and its children) and ratios to
# bubblewrap. Throughput: P parallel loops of the same command for P = 1, 2, 4, 8, the
# contenders interleaved in each round; runs per second and the ratio to bubblewrap.
# Raw JSON goes to bench/out/. Needs root (or user namespaces), hyperfine and bubblewrap:
#   apt-get install -y hyperfine bubblewrap
# Usage: bench/isolation.sh [runs-per-round] [rounds] [throughput-seconds]
#   (throughput-seconds 0 skips the throughput part)
# With BASELINE=path/to/an/older/agentbox the older binary runs beside the others
# (namespace level) for a before/after comparison in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-200}"
rounds="${2:-3}"
tput_secs="${3:-3}"
for tool in hyperfine bwrap unshare python3; do
	command -v "$tool" >/dev/null || { echo "bench/isolation.sh: $tool is missing: apt-get install -y hyperfine bubblewrap util-linux python3" >&2; exit 1; }
done
mkdir -p bench/out
# agentbox with its sandbox init beside it, as installed (README), in a directory
# only its owner may write: agentbox refuses an init that others could replace.
bin=$(mktemp -d)
ws=$(mktemp -d)
trap 'rm -rf "$ws" "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/" ./cmd/agentbox ./cmd/agentbox-init
ab="$bin/agentbox"
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
if [ -n "${BASELINE:-}" ]; then
	names+=("baseline agentbox --isolation namespace")
	cmds+=("$(realpath "$BASELINE") run --isolation namespace --workspace $ws -- /bin/true")
fi

echo "load before: $(uptime)"
for r in $(seq 1 "$rounds"); do
	args=()
	for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
	hyperfine -N --warmup 20 --runs "$runs" --style none --export-json "bench/out/isolation-$r.json" "${args[@]}" >/dev/null 2>"bench/out/isolation-$r.log"
done

python3 - "$rounds" <<'PY'
import json, statistics, sys
rounds = int(sys.argv[1])
times, cpu = {}, {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"bench/out/isolation-{r}.json"))["results"]:
        times.setdefault(res["command"], []).extend(res["times"])
        cpu.setdefault(res["command"], []).append(res["user"] + res["system"])
bw = "bubblewrap --unshare-all"
wall_bw = statistics.median(times[bw])
cpu_bw = statistics.median(cpu[bw])
print(f"{'running /bin/true':40} {'median ms':>9} {'p90 ms':>7} {'x bwrap':>8} {'cpu ms':>7} {'cpu x bwrap':>11}")
for name, ts in times.items():
    ts = sorted(ts)
    med = statistics.median(ts)
    c = statistics.median(cpu[name])
    print(f"{name:40} {med*1000:9.2f} {ts[int(len(ts)*0.9)]*1000:7.2f} {med/wall_bw:8.2f} {c*1000:7.2f} {c/cpu_bw:11.2f}")
PY

if [ "$tput_secs" != 0 ]; then
	echo
	echo "throughput: runs per second with P parallel loops (${tput_secs} s per loop set, median of $rounds rounds):"
	# loop runs the command over and over for the given seconds and prints how many
	# times it ran; P of them run at once.
	loop() {
		local end=$((SECONDS + $1)) n=0
		shift
		while [ $SECONDS -lt $end ]; do "$@" >/dev/null; n=$((n + 1)); done
		echo $n
	}
	out=bench/out/throughput.txt
	: > "$out"
	for r in $(seq 1 "$rounds"); do
		for p in 1 2 4 8; do
			for i in "${!cmds[@]}"; do
				[ "$i" = 0 ] || [ "$i" = 1 ] && continue # the floors: not the question here
				read -r -a argv <<< "${cmds[$i]}"
				start=$(date +%s.%N)
				total=0
				for k in $(seq 1 "$p"); do loop "$tput_secs" "${argv[@]}" > "$ws.loop$k" & done
				wait
				stop=$(date +%s.%N)
				for k in $(seq 1 "$p"); do total=$((total + $(cat "$ws.loop$k"))); rm -f "$ws.loop$k"; done
				echo "$r $p ${names[$i]}|$total $start $stop" >> "$out"
			done
		done
	done
	python3 - "$out" <<'PY'
import statistics, sys
rate = {}
for line in open(sys.argv[1]):
    head, tail = line.rstrip("\n").split("|")
    r, p, name = head.split(" ", 2)
    n, start, stop = tail.split()
    rate.setdefault((int(p), name), []).append(int(n) / (float(stop) - float(start)))
names = sorted({n for _, n in rate}, key=lambda n: ["bubblewrap --unshare-all", "agentbox --isolation process", "agentbox --isolation namespace", "baseline agentbox --isolation namespace"].index(n))
print(f"{'runs/s':40}" + "".join(f"{'P=' + str(p):>9} {'x bw':>5}" for p in (1, 2, 4, 8)))
for name in names:
    row = f"{name:40}"
    for p in (1, 2, 4, 8):
        v = statistics.median(rate[(p, name)])
        b = statistics.median(rate[(p, "bubblewrap --unshare-all")])
        row += f"{v:9.1f} {v/b:5.2f}"
    print(row)
PY
fi

echo "load after: $(uptime)"
echo
echo "where agentbox's namespace start-up goes (median ms per phase, sandbox package, /bin/true):"
CGO_ENABLED=0 go test -run '^$' -bench 'BenchmarkTrue(Overlay)?(Init)?$' -benchtime 40x ./internal/sandbox/ | awk '/^BenchmarkTrue/ {
	printf "%s\n", $1
	for (i = 5; i < NF; i += 2) printf "  %-22s %8s\n", $(i+1), $i
}'
