package nsinit

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/proctab"
)

// Scan intervals of a persistent init: while commands exist the ledger is refreshed
// this often (so that a process whose parent dies later is already attributed),
// and while a command is being killed, faster.
const (
	scanInterval = 50 * time.Millisecond
	killInterval = 2 * time.Millisecond
	// killTimeout bounds OpKill: processes still alive then are reported as
	// survivors (they die with the sandbox).
	killTimeout = 5 * time.Second
)

// server is a persistent init's state. Everything runs on the init's main thread
// (see confine: below Landlock ABI 8 only it may signal the sandbox's processes,
// and the commands are forked from it), in one poll(2) loop: no goroutine hands a
// request, a control byte or a child's exit to it. Each hand-off to a locked thread
// is a futex wake-up and a switch of the runtime's P between threads, which was
// most of an exec's cost in the init (BENCHMARKS.md, "Warm pools and density").
type server struct {
	sock  int // FDServe
	ctl   int // FDControl, non-blocking
	cmds  map[uint64]*command
	mains map[int]*command // main processes not yet reaped
	led   *ledger
	buf   []byte
	oob   []byte
	pfds  []unix.PollFd
}

// command is one command of a persistent sandbox.
type command struct {
	id      uint64
	pid     int
	pidfd   int // the main process's, until it is reaped; it polls readable at its exit
	exited  bool
	usage   Rusage // reaped until the main process's exit
	extra   Rusage // reaped after it
	killing bool
	killBy  time.Time
}

// request is a Request with the descriptors that came with it.
type request struct {
	*Request
	fds []int
}

// serve is a persistent init after setup: it hands the host its /workspace, then
// starts, signals and kills commands on request until the host goes away (control
// pipe or socket closed), when it kills everything and returns.
//
// The loop waits in poll(2) for the socket, the control pipe and the pidfd of
// every main process still running. Orphans the init adopts are reaped on the
// SIGCHLD that interrupts the poll (the runtime's handler drops it; nothing is
// Notify'd, so no goroutine wakes) and on the scan timer while commands exist;
// a SIGCHLD that lands while the thread is not in poll is not lost for a main
// process (its pidfd stays readable), only delayed for an orphan.
func serve(st *status, ctl *os.File) int {
	if err := sendReady(FDServe, st); err != nil {
		st.fail(err)
		return 1
	}
	if err := nullStdio(); err != nil {
		st.fail(err)
		return 1
	}
	// The host's umask would otherwise leak in; 022 is what programs expect.
	syscall.Umask(0o022)
	// Blocking sends, as the runtime's poller made them (a reply waits for room);
	// receives do not wait (MSG_DONTWAIT).
	if err := unix.SetNonblock(FDServe, false); err != nil {
		st.fail(at("serve socket", err))
		return 1
	}
	// ctl (FDControl, non-blocking since run) is read only when poll says so; it
	// must stay reachable, or its finalizer would close the descriptor.
	defer runtime.KeepAlive(ctl)
	s := &server{sock: FDServe, ctl: FDControl, cmds: map[uint64]*command{}, mains: map[int]*command{},
		led: newLedger(), buf: make([]byte, MaxMessage+1), oob: make([]byte, unix.CmsgSpace(4*3))}
	for {
		woke, err := s.wait()
		if err != nil {
			return s.shutdown(st)
		}
		if woke.sock {
			if !s.receive() {
				return s.shutdown(st)
			}
		}
		if woke.ctl {
			if !s.control() {
				return s.shutdown(st)
			}
		}
		if woke.child || woke.timeout {
			s.reap(woke.timeout)
		}
		s.progressKills()
	}
}

// woken says what ended a wait.
type woken struct{ sock, ctl, child, timeout bool }

// wait polls the socket, the control pipe and the running main processes' pidfds
// for at most interval.
func (s *server) wait() (woken, error) {
	ev := int16(unix.POLLIN)
	s.pfds = append(s.pfds[:0], unix.PollFd{Fd: int32(s.sock), Events: ev}, unix.PollFd{Fd: int32(s.ctl), Events: ev})
	for _, c := range s.mains {
		s.pfds = append(s.pfds, unix.PollFd{Fd: int32(c.pidfd), Events: ev})
	}
	n, err := unix.Poll(s.pfds, int(s.interval()/time.Millisecond))
	switch {
	case err == unix.EINTR:
		return woken{child: true}, nil // most likely a SIGCHLD: a wait4 costs little
	case err != nil:
		return woken{}, at("poll", err)
	case n == 0:
		return woken{timeout: true}, nil
	}
	var w woken
	w.sock = s.pfds[0].Revents != 0
	w.ctl = s.pfds[1].Revents != 0
	for _, p := range s.pfds[2:] {
		w.child = w.child || p.Revents != 0
	}
	return w, nil
}

// sendReady opens /workspace as the sandbox sees it (the overlay, after the pivot)
// and sends it to the host, which does its file operations through it: it sees
// exactly what the sandbox sees and never touches the upper layer behind the
// overlay's back. O_PATH: the descriptor grants no access of its own.
func sendReady(sock int, st *status) error {
	fd, err := unix.Open("/workspace", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return at("open /workspace", err)
	}
	defer unix.Close(fd)
	st.mark("ready")
	b, err := EncodeReply(&Reply{Kind: ReplyReady, Landlock: st.landlock, InitUID: st.uid, InitCapEff: st.capEff, Stamps: st.stamps})
	if err != nil {
		return at("ready", err)
	}
	if err := unix.Sendmsg(sock, b, unix.UnixRights(fd), nil, 0); err != nil {
		return at("send ready", err)
	}
	return nil
}

// receive handles every Request waiting on the socket and reports false once it
// has closed. A malformed message ends the connection: the host is agentbox
// itself, so it is a bug, not input.
func (s *server) receive() bool {
	for {
		n, oobn, flags, _, err := unix.Recvmsg(s.sock, s.buf, s.oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true
		}
		var fds []int
		if oobn > 0 {
			fds = parseRights(s.oob[:oobn])
		}
		if err != nil || n == 0 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			closeAll(fds)
			return false
		}
		r, err := DecodeRequest(s.buf[:n])
		if err != nil {
			closeAll(fds)
			return false
		}
		s.handle(request{Request: r, fds: fds})
	}
}

// control acts on the host's control bytes and reports false at EOF.
func (s *server) control() bool {
	var b [16]byte
	for {
		n, err := unix.Read(s.ctl, b[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true
		case err != nil || n == 0:
			return false
		}
		for _, c := range b[:n] {
			if c == CtlTerminate {
				_ = unix.Kill(-1, unix.SIGTERM)
			}
		}
	}
}

func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if f, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// reply sends r with fds attached; a failure means the host is gone, which the next
// read notices.
func (s *server) reply(r *Reply, fds ...int) {
	b, err := EncodeReply(r)
	if err != nil {
		return
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for unix.Sendmsg(s.sock, b, oob, nil, 0) == unix.EINTR {
	}
}

// interval is how long the loop may sleep without a scan.
func (s *server) interval() time.Duration {
	for _, c := range s.cmds {
		if c.killing {
			return killInterval
		}
	}
	if len(s.cmds) > 0 {
		return scanInterval
	}
	return time.Hour
}

func (s *server) handle(r request) {
	defer closeAll(r.fds)
	switch r.Op {
	case OpExec:
		s.exec(r)
	case OpSignal:
		if c := s.cmds[r.ID]; c != nil {
			s.signal(c, syscall.Signal(r.Signal))
		}
	case OpKill:
		c := s.cmds[r.ID]
		if c == nil {
			s.reply(&Reply{Kind: ReplyGone, ID: r.ID})
			return
		}
		if !c.killing {
			// progressKills, right after this request, sends the first SIGKILL:
			// one scan of the process table, not two.
			c.killing, c.killBy = true, time.Now().Add(killTimeout)
		}
	}
}

func (s *server) exec(r request) {
	fail := func(err error) {
		m := errorReply(err)
		m.ID = r.ID
		s.reply(m)
	}
	if _, dup := s.cmds[r.ID]; dup {
		fail(at("exec", unix.EEXIST))
		return
	}
	master := -1
	if r.TTY != nil {
		if len(r.fds) != 0 {
			fail(at("stdio", unix.EBADF))
			return
		}
		m, slave, err := openPTY(*r.TTY)
		if err != nil {
			fail(err)
			return
		}
		defer unix.Close(m)
		defer unix.Close(slave) // the command has its own copies once started
		master = m
		r.fds = []int{slave, slave, slave}
	}
	if len(r.fds) != 3 {
		fail(at("stdio", unix.EBADF))
		return
	}
	pid, pidfd, err := startExec(r.Request, r.fds)
	if err != nil {
		fail(err)
		return
	}
	c := &command{id: r.ID, pid: pid, pidfd: pidfd}
	s.cmds[r.ID] = c
	s.mains[pid] = c
	s.led.adopt(r.ID, pid)
	if master >= 0 {
		s.reply(&Reply{Kind: ReplyStarted, ID: r.ID, Pid: pid}, master)
		return
	}
	s.reply(&Reply{Kind: ReplyStarted, ID: r.ID, Pid: pid})
}

// scan refreshes the ledger.
func (s *server) scan() {
	procs, err := readProcs()
	if err == nil {
		s.led.update(procs)
	}
}

// reap collects every child that exited (the commands' main processes and the
// orphans the init adopted), attributing its usage to its command. A main process
// is its command's by pid; an orphan needs a scan first (a reaped process leaves
// /proc), which is skipped when no other child is waiting to be reaped, unless
// rescan asks for it (the scan timer). A command whose main process has exited and
// which has no process left is reported gone at once: its OpKill would have nothing
// to do.
func (s *server) reap(rescan bool) {
	exited := s.reapMains()
	scanned := rescan || s.waiting()
	if scanned {
		s.scan()
		if s.reapOrphans() {
			// A main process reaped there exited after the scan, which
			// therefore says nothing of what it left.
			exited, scanned = true, false
		}
	}
	if exited {
		s.reportGone(scanned)
	}
}

// reapMains reaps the main processes that have exited and reports whether any had.
func (s *server) reapMains() bool {
	exited := false
	for pid, c := range s.mains {
		var ws unix.WaitStatus
		var ru unix.Rusage
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, &ru)
		for err == unix.EINTR {
			got, err = unix.Wait4(pid, &ws, unix.WNOHANG, &ru)
		}
		if err != nil || got != pid {
			continue
		}
		s.mainExited(c, ws, &ru)
		exited = true
	}
	return exited
}

// mainExited reports the exit of c's main process, just reaped.
func (s *server) mainExited(c *command, ws unix.WaitStatus, ru *unix.Rusage) {
	s.led.reaped(c.pid)
	delete(s.mains, c.pid)
	unix.Close(c.pidfd)
	c.usage.add(rusage(ru))
	c.exited = true
	s.reply(&Reply{Kind: ReplyExit, ID: c.id, WaitStatus: uint32(ws), Rusage: c.usage})
}

// reapOrphans reaps every other child that exited, after a scan attributed them,
// and reports whether a main process was among them (it exited after reapMains
// looked).
func (s *server) reapOrphans() (mainExited bool) {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, &ru)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return mainExited
		}
		if c := s.mains[pid]; c != nil {
			s.mainExited(c, ws, &ru)
			mainExited = true
			continue
		}
		id, known := s.led.lookup(pid)
		s.led.reaped(pid)
		c := s.cmds[id]
		switch {
		case !known || c == nil:
		case c.exited:
			c.extra.add(rusage(&ru))
		default:
			c.usage.add(rusage(&ru))
		}
	}
}

// reportGone sends ReplyGone for each command whose main process has exited and
// which has no process left, and forgets it. What a scan after the exit found of a
// command (scanned), less what was reaped since, is all there is of it: no process
// of it was left to fork another. Without such a scan, a sandbox with no process
// but the init has none left of any command; otherwise it scans.
func (s *server) reportGone(scanned bool) {
	if !scanned {
		pids, err := proctab.PIDs()
		if err != nil {
			return
		}
		if len(pids) > 1 || (len(pids) == 1 && pids[0] != 1) {
			s.scan()
		} else {
			for id := range s.led.members {
				delete(s.led.members, id)
			}
		}
	}
	for id, c := range s.cmds {
		if c.exited && !c.killing && len(s.led.members[id]) == 0 {
			s.reply(&Reply{Kind: ReplyGone, ID: id, Rusage: c.extra})
			s.forget(c)
		}
	}
}

// waiting reports whether a child has exited and is not reaped yet, without
// reaping it (WNOWAIT).
func (s *server) waiting() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		// ECHILD: no child at all. With WNOHANG and none exited, info stays zero.
		return err == nil && info.Signo != 0
	}
}

// signal sends sig to every live process of c.
func (s *server) signal(c *command, sig syscall.Signal) {
	s.scan()
	for _, p := range s.led.members[c.id] {
		if p.state != 'Z' {
			signalProc(p, sig)
		}
	}
}

// progressKills repeats the kill of every command being killed, and reports
// those with nothing left.
func (s *server) progressKills() {
	for id, c := range s.cmds {
		if !c.killing {
			continue
		}
		s.signal(c, unix.SIGKILL)
		left := len(s.led.members[id])
		if left == 0 && c.exited {
			s.reply(&Reply{Kind: ReplyGone, ID: id, Rusage: c.extra})
			s.forget(c)
			continue
		}
		if time.Now().After(c.killBy) {
			s.reply(&Reply{Kind: ReplyGone, ID: id, Rusage: c.extra, Survivors: left})
			s.forget(c)
		}
	}
}

func (s *server) forget(c *command) {
	delete(s.cmds, c.id)
	if s.mains[c.pid] == c {
		delete(s.mains, c.pid)
		unix.Close(c.pidfd)
	}
	s.led.forget(c.id)
}

// shutdown kills every process of the sandbox and reaps them all: the host is gone
// or destroying the sandbox.
func (s *server) shutdown(st *status) int {
	for {
		_ = unix.Kill(-1, unix.SIGKILL)
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.ECHILD {
			break
		}
	}
	st.mark("reaped")
	st.send(Message{Kind: KindExit})
	_ = st.f.Close()
	return 0
}

// signalProc signals p through a pidfd after checking that the pid still names the
// same process, so a recycled pid is never hit.
func signalProc(p proc, sig syscall.Signal) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if q, err := readProc(p.pid); err != nil || q.start != p.start {
		return
	}
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
}

func rusage(ru *unix.Rusage) Rusage {
	return Rusage{UserNS: ru.Utime.Nano(), SysNS: ru.Stime.Nano(), MaxRSSKB: ru.Maxrss}
}

func (u *Rusage) add(o Rusage) {
	u.UserNS += o.UserNS
	u.SysNS += o.SysNS
	u.MaxRSSKB = max(u.MaxRSSKB, o.MaxRSSKB)
}

// errorReply describes a failure to start a command as status.fail does.
func errorReply(err error) *Reply {
	m := &Reply{Kind: ReplyError, Stage: "init", Detail: err.Error()}
	var se *stageError
	if errors.As(err, &se) {
		m.Stage, m.Detail = se.stage, se.err.Error()
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		m.Errno = int(errno)
	}
	return m
}
