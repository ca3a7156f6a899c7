#!/usr/bin/env bash
# Sandbox start on an image against the host root, and the disk 50 environments on
# one image use, in one run (as root): go test -bench, N rounds of 20 alternating
# starts each; medians over the rounds and the ratio image/host.
# Usage: bench/image.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-5}"
export CGO_ENABLED=0
out=$(go test -run '^$' -bench 'BenchmarkImageStart' -benchtime 20x -count "$rounds" ./internal/sandbox/)
echo "$out" | grep '^BenchmarkImageStart' | awk -v rounds="$rounds" '
function med(s,   k, xs, i, j, t) {
	k = split(s, xs, " ")
	for (i = 2; i <= k; i++) for (j = i; j > 1 && xs[j-1] + 0 > xs[j] + 0; j--) { t = xs[j]; xs[j] = xs[j-1]; xs[j-1] = t }
	return (k % 2) ? xs[(k+1)/2] : (xs[k/2] + xs[k/2+1]) / 2
}
{ for (i = 3; i < NF; i++) if ($(i+1) == "host-ms") h = h " " $i; else if ($(i+1) == "image-ms") m = m " " $i; else if ($(i+1) == "image-MiB") size = $i }
END {
	printf "%-36s %10s %8s   (median of %d rounds x 20 starts each)\n", "Start to Wait of /usr/bin/true", "median ms", "x host", rounds
	printf "%-36s %10.2f %8.2f\n", "sandbox on the host root", med(h), 1
	printf "%-36s %10.2f %8.2f\n", sprintf("sandbox on a %.0f MiB image (6 layers)", size), med(m), med(m)/med(h)
}'
go test -run '^$' -bench 'BenchmarkImageEnvironments' -benchtime 1x ./internal/sandbox/ | grep '^BenchmarkImageEnvironments' | awk '
{ for (i = 3; i < NF; i++) v[$(i+1)] = $i }
END {
	printf "50 environments on one image: image %.1f MiB stored once, %.1f KiB upper layer each, %.1f MiB in all (50 copies: %.0f MiB)\n", v["image-MiB"], v["upper-KiB/env"], v["total-MiB"], v["copies-MiB"]
}'
