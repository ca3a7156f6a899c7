package cgroup

import (
	"fmt"
	"strconv"
	"strings"
)

// parseKeyed parses a flat-keyed cgroup file ("key value" per line: cpu.stat,
// memory.events, pids.events, memory.oom_control, cpuacct.stat). Lines whose value
// is not an integer are skipped, so new kernel keys cannot break it.
func parseKeyed(data string) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(data, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// parseInt parses a single-value cgroup file such as pids.current.
func parseInt(data string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(data), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", strings.TrimSpace(data), err)
	}
	return n, nil
}

// parsePids parses cgroup.procs or tasks: one decimal id per line.
func parsePids(data string) ([]int, error) {
	var out []int
	for _, f := range strings.Fields(data) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("parse pid %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// releaseAtLeast compares a kernel release such as "6.18.44-fc" or "5.14-rc1" with
// major.minor.
func releaseAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	leading := func(s string) (int, error) {
		end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			end = len(s)
		}
		return strconv.Atoi(s[:end])
	}
	gotMajor, err1 := leading(parts[0])
	gotMinor, err2 := leading(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return gotMajor > major || gotMajor == major && gotMinor >= minor
}
