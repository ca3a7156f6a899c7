#!/usr/bin/env bash
# Process-level overhead of agentbox's runner against plain fork+exec and os/exec,
# measured in one run: go test -bench, N rounds, medians and ratios to fork+exec.
# Usage: bench/runner.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-10}"
out=$(go test -run '^$' -bench 'True' -benchtime 2000x -count "$rounds" ./internal/runner/)
echo "$out" | grep '^Benchmark' | awk '{ name=$1; sub(/-[0-9]+$/, "", name); print name, $3 }' | sort -k1,1 -k2,2n | awk -v rounds="$rounds" '
{ v[$1] = v[$1] " " $2; n[$1]++ }
END {
	split("BenchmarkForkExecTrue BenchmarkOSExecTrue BenchmarkRunTrueProcess", order, " ")
	for (i = 1; i <= 3; i++) {
		k = split(v[order[i]], xs, " ")
		med[i] = (k % 2) ? xs[(k+1)/2] : (xs[k/2] + xs[k/2+1]) / 2
	}
	printf "%-26s %12s %12s   (median of %d rounds x 2000 runs)\n", "running /bin/true", "median us", "x fork+exec", rounds
	for (i = 1; i <= 3; i++) printf "%-26s %12.1f %12.2f\n", order[i], med[i]/1000, med[i]/med[1]
}'
