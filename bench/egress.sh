#!/usr/bin/env bash
# The egress proxy's cost against going straight to the origin, side by side in one
# go test -bench run (a test host in a network namespace, reached over a veth pair):
# latency of a small GET over a kept-alive client connection, throughput of a 16 MiB
# GET, plain HTTP and HTTPS (a CONNECT tunnel). N rounds; medians and ratios of wall
# time and of CPU time per request (client, proxy and origin are one process; CPU
# holds on a loaded machine where wall time does not). Needs root (the test host's
# namespace).
# Usage: bench/egress.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-5}"
CGO_ENABLED=0 go test -run '^$' -bench 'Egress' -benchtime 2s -count "$rounds" ./internal/egress/ |
python3 -c '
import re, statistics, sys
rounds = sys.argv[1]
ns, mbs, cpu = {}, {}, {}
for line in sys.stdin:
    m = re.match(r"BenchmarkEgress/(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
    if not m:
        continue
    ns.setdefault(m[1], []).append(float(m[3]))
    if mb := re.search(r"([\d.]+) MB/s", line):
        mbs.setdefault(m[1], []).append(float(mb[1]))
    if c := re.search(r"([\d.]+) cpu-ns/op", line):
        cpu.setdefault(m[1], []).append(float(c[1]))
med = statistics.median
print("%-18s %12s %12s %8s %12s %12s %8s   (median of %s rounds)" % ("", "wall direct", "wall proxy", "x", "cpu direct", "cpu proxy", "x", rounds))
for kind in ("latency/http", "latency/https", "throughput/http", "throughput/https"):
    d, p = kind + "/direct", kind + "/proxy"
    cd, cp = med(cpu[d]) / 1000, med(cpu[p]) / 1000
    if kind.startswith("latency"):
        a, b = med(ns[d]) / 1000, med(ns[p]) / 1000
        print("%-18s %9.1f us %9.1f us %8.2f %9.1f us %9.1f us %8.2f" % (kind, a, b, b / a, cd, cp, cp / cd))
    else:
        a, b = med(mbs[d]), med(mbs[p])
        print("%-18s %7.0f MB/s %7.0f MB/s %8.2f %9.0f us %9.0f us %8.2f" % (kind, a, b, b / a, cd, cp, cp / cd))
' "$rounds"
