// Package proctab reads the process table from /proc: each process's parent, process
// group, session, state and start time, which is what killing a whole process tree
// needs. The runner uses it for agentbox's own children; the sandbox init for the
// processes of its pid namespace. It does not signal or wait for anything.
package proctab

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Proc is one process as /proc/<pid>/stat describes it.
type Proc struct {
	PID, PPID, PGID, SID int
	State                byte   // R, S, D, Z, T…
	Start                uint64 // clock ticks after boot: with PID, names one process
}

// Read lists every process visible in /proc (the caller's pid namespace). Processes
// that exit during the scan are left out.
func Read() ([]Proc, error) {
	pids, err := PIDs()
	if err != nil {
		return nil, err
	}
	out := make([]Proc, 0, len(pids))
	for _, pid := range pids {
		if p, err := ReadPID(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// PIDs lists the pids in /proc without reading anything of them: the cheap half
// of Read (a stat file costs the kernel more to generate than a directory entry).
func PIDs() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// ReadPID reads one process's stat line.
func ReadPID(pid int) (Proc, error) {
	b, err := readStat(pid)
	if err != nil {
		return Proc{}, err
	}
	return Parse(pid, b)
}

// Parse parses a stat line. The command name is in parentheses and may itself hold
// spaces and parentheses (sandboxed code chooses it), so fields are counted from the
// last ')'.
func Parse(pid int, b []byte) (Proc, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Proc{}, fmt.Errorf("malformed stat for %d", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	// f[0] is field 3 (state); field N is f[N-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return Proc{}, fmt.Errorf("short stat for %d", pid)
	}
	p := Proc{PID: pid, State: f[0][0]}
	var errs [4]error
	p.PPID, errs[0] = strconv.Atoi(f[1])
	p.PGID, errs[1] = strconv.Atoi(f[2])
	p.SID, errs[2] = strconv.Atoi(f[3])
	p.Start, errs[3] = strconv.ParseUint(f[19], 10, 64)
	for _, err := range errs {
		if err != nil {
			return Proc{}, fmt.Errorf("stat for %d: %w", pid, err)
		}
	}
	return p, nil
}
