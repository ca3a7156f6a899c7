package nsinit

// ledger attributes the processes of a persistent sandbox to the commands they
// belong to. Every process descends from one command's main process, but once its
// parent dies it is re-parented to the init and the family link is gone; sandboxed
// code cannot hide from the cgroup, but it can from this. So the ledger remembers:
// a process keeps the command it was first attributed to (by pid and start time,
// so a reused pid is a new process), and a session keeps the command of the
// process that led it. A process is attributed, in order, by what the ledger
// remembers of it, by its living parent, and by its session. What it still cannot
// attribute is a process whose session leader and parent both died before any
// scan saw them (setsid and a double fork within one scan interval): such a
// process lives on until the sandbox is destroyed.
type ledger struct {
	owner    map[int]owned     // pid -> the process and its command
	sessions map[int]uint64    // session id -> command
	live     map[uint64]bool   // commands not yet forgotten
	members  map[uint64][]proc // command -> its processes in the last scan
}

type owned struct {
	start uint64
	cmd   uint64
	// main: a command's main process, adopted before any scan saw it, so start
	// is not known until one does. Its pid cannot name another process until the
	// init reaps it (reaped drops it then).
	main bool
}

func newLedger() *ledger {
	return &ledger{owner: map[int]owned{}, sessions: map[int]uint64{}, live: map[uint64]bool{}, members: map[uint64][]proc{}}
}

// adopt records a command's main process, the init's child pid, which leads a
// session of its own (its pid). Its start time comes with the next scan.
func (l *ledger) adopt(cmd uint64, pid int) {
	l.live[cmd] = true
	l.owner[pid] = owned{cmd: cmd, main: true}
	l.sessions[pid] = cmd
}

// forget drops a command and everything attributed to it.
func (l *ledger) forget(cmd uint64) {
	delete(l.live, cmd)
	delete(l.members, cmd)
	for pid, o := range l.owner {
		if o.cmd == cmd {
			delete(l.owner, pid)
		}
	}
	for sid, c := range l.sessions {
		if c == cmd {
			delete(l.sessions, sid)
		}
	}
}

// lookup returns the command of pid as last attributed.
func (l *ledger) lookup(pid int) (uint64, bool) {
	o, ok := l.owner[pid]
	return o.cmd, ok
}

// reaped drops a process that was just reaped from its command's members: the
// members of the last scan less those reaped since are what is left of it.
func (l *ledger) reaped(pid int) {
	o, ok := l.owner[pid]
	if !ok {
		return
	}
	delete(l.owner, pid)
	m := l.members[o.cmd]
	for i, p := range m {
		if p.pid == pid {
			l.members[o.cmd] = append(m[:i], m[i+1:]...)
			break
		}
	}
}

// update attributes one scan of the sandbox's processes and rebuilds members.
func (l *ledger) update(procs []proc) {
	byPid := make(map[int]proc, len(procs))
	for _, p := range procs {
		byPid[p.pid] = p
	}
	// Forget processes that are gone, or whose pid now names another process.
	for pid, o := range l.owner {
		p, ok := byPid[pid]
		if ok && o.main && l.live[o.cmd] {
			l.owner[pid] = owned{start: p.start, cmd: o.cmd}
			continue
		}
		if !ok || p.start != o.start || !l.live[o.cmd] {
			delete(l.owner, pid)
		}
	}
	attr := func(p proc) (uint64, bool) {
		if o, ok := l.owner[p.pid]; ok {
			return o.cmd, true
		}
		// A living parent says more than the session: a reused pid can carry a
		// stale session id, never a stale parent.
		if par, ok := byPid[p.ppid]; ok {
			if o, ok := l.owner[par.pid]; ok && o.start == par.start {
				return o.cmd, true
			}
		}
		if c, ok := l.sessions[p.sid]; ok && l.live[c] {
			return c, true
		}
		return 0, false
	}
	// Parents before children: repeat until nothing new is attributed.
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if _, ok := l.owner[p.pid]; ok {
				continue
			}
			if c, ok := attr(p); ok {
				l.owner[p.pid] = owned{start: p.start, cmd: c}
				grew = true
			}
		}
	}
	clear(l.members)
	sessionUsed := map[int]bool{}
	for _, p := range procs {
		o, ok := l.owner[p.pid]
		if !ok {
			continue
		}
		l.members[o.cmd] = append(l.members[o.cmd], p)
		sessionUsed[p.sid] = true
		if p.pid == p.sid {
			l.sessions[p.sid] = o.cmd
		}
	}
	// A session nobody is in any more can only come back as a new session
	// whose leader reuses the pid: forget it.
	for sid := range l.sessions {
		if !sessionUsed[sid] {
			delete(l.sessions, sid)
		}
	}
}
