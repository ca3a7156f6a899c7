package nsinit

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
// (see confine: below Landlock ABI 8 only it may signal the sandbox's processes),
// except readRequests, which only receives.
type server struct {
	conn  *net.UnixConn
	cmds  map[uint64]*command
	mains map[int]*command // main processes not yet reaped
	led   *ledger
}

// command is one command of a persistent sandbox.
type command struct {
	id      uint64
	pid     int
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
func serve(st *status, ctl *os.File) int {
	conn, err := serverConn()
	if err != nil {
		st.fail(at("serve socket", err))
		return 1
	}
	chld := watchChildren()
	if err := sendReady(conn, st); err != nil {
		st.fail(err)
		return 1
	}
	if err := nullStdio(); err != nil {
		st.fail(err)
		return 1
	}
	// The host's umask would otherwise leak in; 022 is what programs expect.
	syscall.Umask(0o022)
	reqs := make(chan request)
	go readRequests(conn, reqs)
	ctlc := make(chan byte, 1)
	go readControl(ctl, ctlc)

	s := &server{conn: conn, cmds: map[uint64]*command{}, mains: map[int]*command{}, led: newLedger()}
	timer := time.NewTimer(time.Hour)
	for {
		timer.Reset(s.interval())
		select {
		case <-chld:
			s.reap()
		case r, ok := <-reqs:
			if !ok {
				return s.shutdown(st)
			}
			s.handle(r)
		case b, ok := <-ctlc:
			if !ok {
				return s.shutdown(st)
			}
			if b == CtlTerminate {
				_ = unix.Kill(-1, unix.SIGTERM)
			}
		case <-timer.C:
			s.reap()
		}
		s.progressKills()
	}
}

// serverConn wraps FDServe for the runtime's poller.
func serverConn() (*net.UnixConn, error) {
	f := os.NewFile(FDServe, "serve")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, unix.EINVAL
	}
	return uc, nil
}

// sendReady opens /workspace as the sandbox sees it (the overlay, after the pivot)
// and sends it to the host, which does its file operations through it: it sees
// exactly what the sandbox sees and never touches the upper layer behind the
// overlay's back. O_PATH: the descriptor grants no access of its own.
func sendReady(conn *net.UnixConn, st *status) error {
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
	if _, _, err := conn.WriteMsgUnix(b, unix.UnixRights(fd), nil); err != nil {
		return at("send ready", err)
	}
	return nil
}

// readRequests receives Requests until the socket closes. A malformed message
// ends the connection: the host is agentbox itself, so it is a bug, not input.
func readRequests(conn *net.UnixConn, out chan<- request) {
	defer close(out)
	rc, err := conn.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, MaxMessage+1)
	oob := make([]byte, unix.CmsgSpace(4*3))
	for {
		var n, oobn, flags int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			forkMu.Lock() // no descriptor arrives while RLIMIT_NOFILE is lent
			n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
			forkMu.Unlock()
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		var fds []int
		if oobn > 0 {
			fds = parseRights(oob[:oobn])
		}
		if err != nil || n == 0 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			closeAll(fds)
			return
		}
		r, err := DecodeRequest(buf[:n])
		if err != nil {
			closeAll(fds)
			return
		}
		out <- request{Request: r, fds: fds}
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
	_, _, _ = s.conn.WriteMsgUnix(b, oob, nil)
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
	pid, err := startExec(r.Request, r.fds)
	if err != nil {
		fail(err)
		return
	}
	c := &command{id: r.ID, pid: pid}
	s.cmds[r.ID] = c
	s.mains[pid] = c
	// Its stat is there even if it exited already: nobody reaped it yet.
	p, err := readProc(pid)
	if err != nil {
		p = proc{pid: pid, sid: pid}
	}
	s.led.adopt(r.ID, p)
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
// orphans the init adopted), attributing its usage to its command.
func (s *server) reap() {
	s.scan()
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, &ru)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		u := Rusage{UserNS: ru.Utime.Nano(), SysNS: ru.Stime.Nano(), MaxRSSKB: ru.Maxrss}
		if c := s.mains[pid]; c != nil {
			delete(s.mains, pid)
			c.usage.add(u)
			c.exited = true
			s.reply(&Reply{Kind: ReplyExit, ID: c.id, WaitStatus: uint32(ws), Rusage: c.usage})
			continue
		}
		id, ok := s.led.lookup(pid)
		c := s.cmds[id]
		switch {
		case !ok || c == nil:
		case c.exited:
			c.extra.add(u)
		default:
			c.usage.add(u)
		}
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
