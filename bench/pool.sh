#!/usr/bin/env bash
# Warm pools and density of `agentbox serve` (issue 16), each against a daemon
# of its own (own state directory, socket and token), driven by bench/envload
# over the Unix socket:
#   burst:   N concurrent creates, each followed by its first exec (`true`),
#            ROUNDS times, without a pool and with one of N..2N members (each
#            round waits until the pool is full again); medians and tails of
#            create and of create -> first exec, and the CPU time per create
#            and first exec of the daemon and of the sandboxes (init and
#            command: their cgroups), which the machine's load moves less.
#   density: D idle environments created 4 at a time, then what each costs the
#            host (its init's unique and proportional set size, its cgroup's
#            charge and kernel memory, the daemon's growth, the host's used
#            memory growth, which the machine's other users move too), then 10
#            clients each running `true` 200 times in its own environment: the
#            exec tail and p99/p50.
# Raw JSON goes to bench/out/pool-*.json. Needs root.
# Usage: bench/pool.sh [N=50] [ROUNDS=5] [D=1000]   (D=0 skips density)
# AGENTBOX=path runs that agentbox binary (and the agentbox-init beside it, if
# any) instead of those built from the tree: a before/after comparison builds the
# old commit's and runs the script once with them and once without, in one
# sitting. TAG=name goes into the JSON files' names.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-50}"
rounds="${2:-5}"
dens="${3:-1000}"
[ "$(id -u)" = 0 ] || { echo "bench/pool.sh: run as root (environments need it)" >&2; exit 1; }
mkdir -p bench/out
bin="${AGENTBOX:-bench/out/agentbox}"
tag="${TAG:+-$TAG}"
# With agentbox-init beside it, as installed (README): the init is package nsinit
# alone, whose idle memory is what the density run measures.
[ -n "${AGENTBOX:-}" ] || go build -o bench/out/ ./cmd/agentbox ./cmd/agentbox-init
go build -o bench/out/envload ./bench/envload
tmp=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null && wait "$pid" || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"
mkdir -m 700 "$tmp/run"

# serve NAME EXTRA-YAML starts a daemon on a fresh state directory.
serve() {
	cat >"$tmp/$1.yaml" <<-EOF
	socket: $tmp/run/agentbox.sock
	state_dir: $tmp/state-$1
	limits: {max_connections: 1024}
	tenants: {bench: {}}
	tokens: [{name: bench, tenant: bench, file: $tmp/token, scopes: [admin, operator]}]
	$2
	EOF
	"$bin" serve --config "$tmp/$1.yaml" >"$tmp/$1.log" 2>&1 &
	pid=$!
	for _ in $(seq 200); do
		[ -S "$tmp/run/agentbox.sock" ] && curl -sf --unix-socket "$tmp/run/agentbox.sock" http://x/healthz >/dev/null && return
		sleep 0.05
	done
	cat "$tmp/$1.log" >&2
	exit 1
}
stop() {
	kill -TERM "$pid"
	wait "$pid" || true
	pid=""
}
load() { ./bench/out/envload -socket "$tmp/run/agentbox.sock" -token-file "$tmp/token" "$@"; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
serve cold ""
load -mode burst -n "$n" -rounds "$rounds" -daemon-pid "$pid" >bench/out/pool-burst-cold$tag.json
stop
serve pool "pools: [{min: $n, max: $((2 * n))}]"
load -mode burst -n "$n" -rounds "$rounds" -pool-ready "$n" -daemon-pid "$pid" >bench/out/pool-burst-pool$tag.json
stop
if [ "$dens" -gt 0 ]; then
	serve density ""
	load -mode density -n "$dens" -concurrency 4 -daemon-pid "$pid" >bench/out/pool-density$tag.json
	stop
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$dens" "$tag" <<'EOF'
import json, sys
def show(name, f):
    r = json.load(open(f))
    c, x = r["create_ms"], r["create_to_first_exec_ms"]
    u = r.get("cpu_ms_per_create_and_exec", {})
    print(f"| {name} | {r['n']} x {r['rounds']} | {c['P50']:.1f} / {c['P99']:.1f} | {x['P50']:.1f} / {x['P90']:.1f} / {x['P99']:.1f} | {u.get('daemon', 0):.2f} / {u.get('sandbox', 0):.2f} |")
    return x
print("| burst | creates | create p50 / p99 ms | create -> first exec p50 / p90 / p99 ms | CPU ms per create+exec: daemon / sandbox |")
print("|---|---|---|---|---|")
cold = show("no pool", f"bench/out/pool-burst-cold{sys.argv[2]}.json")
pool = show("warm pool", f"bench/out/pool-burst-pool{sys.argv[2]}.json")
print(f"\npool / no pool, create -> first exec: p50 {pool['P50']/cold['P50']:.2f}x, p99 {pool['P99']/cold['P99']:.2f}x")
if int(sys.argv[1]) > 0:
    d = json.load(open(f"bench/out/pool-density{sys.argv[2]}.json"))
    print(f"\ndensity: {d['inits']} idle environments created in {d['created_in_s']:.1f} s; create p50 {d['create_ms_first_tenth']['P50']:.1f} ms in the first tenth, {d['create_ms_last_tenth']['P50']:.1f} ms in the last")
    for k, v in d["per_env_mib"].items():
        print(f"  per environment, {k}: {v:.2f}")
    t = d["exec_tail_ms"]
    print(f"  exec, 10 clients on 10 environments: p50 {t['P50']:.1f} ms, p99 {t['P99']:.1f} ms, p99/p50 {d['tail_p99_over_p50']:.2f}")
EOF
