package nsinit

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

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
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	out := make([]proc, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == 1 {
			continue
		}
		if p, err := readProc(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func readProc(pid int) (proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, err
	}
	return parseProcStat(pid, b)
}

// parseProcStat parses a stat line. The command name is in parentheses and may
// itself hold spaces and parentheses (sandboxed code chooses it), so fields are
// counted from the last ')'.
func parseProcStat(pid int, b []byte) (proc, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return proc{}, fmt.Errorf("malformed stat for %d", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	// f[0] is field 3 (state); field N is f[N-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return proc{}, fmt.Errorf("short stat for %d", pid)
	}
	p := proc{pid: pid, state: f[0][0]}
	var errs [3]error
	p.ppid, errs[0] = strconv.Atoi(f[1])
	p.sid, errs[1] = strconv.Atoi(f[3])
	p.start, errs[2] = strconv.ParseUint(f[19], 10, 64)
	for _, err := range errs {
		if err != nil {
			return proc{}, fmt.Errorf("stat for %d: %w", pid, err)
		}
	}
	return p, nil
}
