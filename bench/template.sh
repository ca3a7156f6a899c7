#!/usr/bin/env bash
# Cold and fully cached builds of templates/*.yaml, and the layer cache's hit
# rate, from the CLI (as root): each spec is built into an empty state directory
# of its own, then again unchanged. Prints the wall time of each whole CLI
# process, the steps the cache had (its Debian base counts as one), and the
# store's size. Extra flags go to every build (--allow-private, --ca-file for a
# site's mirror or TLS interceptor).
# Usage: bench/template.sh [SPEC...] [-- BUILD-FLAGS...]   (default: every spec)
set -euo pipefail
cd "$(dirname "$0")/.."
specs=() flags=()
while [ $# -gt 0 ]; do
	if [ "$1" = -- ]; then shift; flags=("$@"); break; fi
	specs+=("$1"); shift
done
[ ${#specs[@]} -gt 0 ] || specs=(templates/*.yaml)
bin=$(mktemp -d)/agentbox
CGO_ENABLED=0 go build -o "$bin" ./cmd/agentbox
echo "load before: $(uptime)"
printf '%-20s %10s %14s %10s %14s %10s\n' spec cold cached again cached store
for spec in "${specs[@]}"; do
	state=$(mktemp -d)
	name=$(basename "$spec" .yaml)
	row=()
	for run in cold again; do
		start=$(date +%s.%N)
		out=$("$bin" template --state-dir "$state" build --name "$name" -f "$spec" "${flags[@]}" 2>"$state/$run.log") ||
			{ echo "$spec ($run) failed:"; tail -5 "$state/$run.log"; continue 2; }
		secs=$(echo "$(date +%s.%N) - $start" | bc)
		hits=$(echo "$out" | grep -o '[0-9]* of [0-9]* build steps cached' | cut -d' ' -f1,3 | tr ' ' /)
		row+=("$(printf '%.2fs' "$secs")" "${hits:-0/0}")
	done
	printf '%-20s %10s %14s %10s %14s %10s\n' "$name" "${row[@]}" "$(du -sh "$state/images" | cut -f1)"
	"$bin" template --state-dir "$state" rm "$name" >/dev/null
	"$bin" template --state-dir "$state" gc --cache >/dev/null
	rm -rf "$state"
done
echo "load after: $(uptime)"
