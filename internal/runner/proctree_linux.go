package runner

import (
	"os"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/proctab"
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
	all, err := proctab.Read()
	if err != nil {
		return nil, err
	}
	out := make([]procInfo, len(all))
	for i, p := range all {
		out[i] = infoOf(p)
	}
	return out, nil
}

func readStat(pid int) (procInfo, error) {
	p, err := proctab.ReadPID(pid)
	return infoOf(p), err
}

func infoOf(p proctab.Proc) procInfo {
	return procInfo{pid: p.PID, ppid: p.PPID, pgid: p.PGID, sid: p.SID, state: p.State, startTime: p.Start}
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
