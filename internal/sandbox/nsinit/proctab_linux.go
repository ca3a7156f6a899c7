package nsinit

import "github.com/agentbox/agentbox/internal/proctab"

// proc is what attribution needs from /proc/<pid>/stat.
type proc struct {
	pid, ppid, sid int
	state          byte
	start          uint64 // clock ticks after boot: with pid, names one process
}

// readProcs lists every process of the sandbox's pid namespace but the init: the
// init's /proc is the sandbox's own. Processes that exit during the scan are
// skipped.
func readProcs() ([]proc, error) {
	all, err := proctab.Read()
	if err != nil {
		return nil, err
	}
	out := make([]proc, 0, len(all))
	for _, p := range all {
		if p.PID != 1 {
			out = append(out, procOf(p))
		}
	}
	return out, nil
}

func readProc(pid int) (proc, error) {
	p, err := proctab.ReadPID(pid)
	return procOf(p), err
}

func procOf(p proctab.Proc) proc {
	return proc{pid: p.PID, ppid: p.PPID, sid: p.SID, state: p.State, start: p.Start}
}
