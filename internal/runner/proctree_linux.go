package runner

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procInfo is what cleanup needs from /proc/<pid>/stat.
type procInfo struct {
	pid, ppid, pgid, sid int
	state                byte
	startTime            uint64
}

// readProcs reads every process's stat line. Processes that exit during the scan are
// skipped.
func readProcs() ([]procInfo, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	out := make([]procInfo, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, err := readStat(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func readStat(pid int) (procInfo, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	return parseStat(pid, b)
}

// parseStat parses a stat line. The command name is in parentheses and may itself hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStat(pid int, b []byte) (procInfo, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procInfo{}, fmt.Errorf("malformed stat for %d", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	// f[0] is field 3 (state); field N is f[N-3].
	if len(f) < 20 {
		return procInfo{}, fmt.Errorf("short stat for %d", pid)
	}
	p := procInfo{pid: pid, state: f[0][0]}
	var errs [4]error
	p.ppid, errs[0] = strconv.Atoi(f[1])
	p.pgid, errs[1] = strconv.Atoi(f[2])
	p.sid, errs[2] = strconv.Atoi(f[3])
	p.startTime, errs[3] = strconv.ParseUint(f[19], 10, 64)
	for _, err := range errs {
		if err != nil {
			return procInfo{}, fmt.Errorf("stat for %d: %w", pid, err)
		}
	}
	return p, nil
}

func procStartTime(pid int) (uint64, error) {
	p, err := readStat(pid)
	return p.startTime, err
}

// ourChildren lists agentbox's living and zombie children that the kernel files under
// its main thread: every orphan re-parented to agentbox as subreaper (the kernel picks
// the first living thread, and Go's main thread never exits while the process lives),
// and the children that thread forked.
func ourChildren() ([]int, error) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			kids = append(kids, pid)
		}
	}
	return kids, nil
}
