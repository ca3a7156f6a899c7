package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// Process is one command running in a persistent sandbox. Its methods are safe
// for concurrent use.
type Process struct {
	s   *Sandbox
	id  uint64
	pid int

	mu      sync.Mutex
	started chan struct{} // closed on ReplyStarted or ReplyError
	exited  chan struct{} // closed on ReplyExit
	gone    chan struct{} // closed on ReplyGone
	start   *nsinit.Reply
	term    *os.File // ExecConfig.TTY's master, with ReplyStarted
	exit    *nsinit.Reply
	end     *nsinit.Reply

	killOnce sync.Once
	killErr  error
}

func newProcess(s *Sandbox, id uint64) *Process {
	return &Process{s: s, id: id, started: make(chan struct{}), exited: make(chan struct{}), gone: make(chan struct{})}
}

// Exec starts a command in a persistent sandbox, in a session of its own, and
// returns once it runs. A command that cannot be found or executed fails with a
// *SetupError at StageExec (Errno ENOENT or EACCES), a missing working directory
// at stage "chdir".
//
// Commands run concurrently. Every process a command starts belongs to it (see
// Process.Kill); its rlimits are applied with prlimit just after its execve (see
// nsinit.startExec for the gap that leaves). The cgroup's limits are the
// sandbox's, shared by all its commands.
func (s *Sandbox) Exec(cfg ExecConfig, stdio Stdio) (*Process, error) {
	if s.cl == nil {
		return nil, errors.New("sandbox: Exec needs a persistent sandbox")
	}
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, errors.New("sandbox: empty command")
	}
	cfg.Env, cfg.Dir = imageEnv(s.cfg.Image, cfg.Env, cfg.Dir)
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir
	}
	if !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("sandbox: working directory %q is not absolute", cfg.Dir)
	}
	if s.destroyed.Load() {
		return nil, ErrDone
	}
	var tty *nsinit.Winsize
	if cfg.TTY != nil {
		if cfg.TTY.Rows == 0 || cfg.TTY.Cols == 0 {
			return nil, fmt.Errorf("sandbox: terminal size %dx%d: give at least one row and one column", cfg.TTY.Cols, cfg.TTY.Rows)
		}
		if stdio != (Stdio{}) {
			return nil, errors.New("sandbox: a command with a TTY has no Stdio: its terminal is its stdio")
		}
		tty = &nsinit.Winsize{Rows: cfg.TTY.Rows, Cols: cfg.TTY.Cols}
	}
	if err := s.id.giveStdio(stdio); err != nil {
		return nil, err
	}
	files := []*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr}
	var null *os.File
	fds := make([]int, 3)
	if tty != nil {
		files, fds = nil, nil
	}
	for i, f := range files {
		if f == nil {
			if null == nil {
				var err error
				if null, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
					return nil, err
				}
				defer null.Close()
			}
			f = null
		}
		fds[i] = int(f.Fd())
	}
	p, err := s.cl.register()
	if err != nil {
		return nil, err
	}
	env := cfg.Env
	if s.cfg.Network != nil {
		env = NetworkEnv(env, s.cfg.Network.Port)
	}
	req := &nsinit.Request{Op: nsinit.OpExec, ID: p.id, Argv: cfg.Argv, Env: env, Dir: cfg.Dir, Rlimits: cfg.Rlimits.spec(), TTY: tty}
	err = s.cl.send(req, fds...)
	runtime.KeepAlive(files) // their descriptors must stay open until sent
	if err != nil {
		s.cl.unregister(p.id)
		return nil, err
	}
	<-p.started
	p.mu.Lock()
	r := p.start
	p.mu.Unlock()
	switch {
	case r == nil:
		return nil, fmt.Errorf("sandbox exec: %w", ErrNoReport)
	case r.Kind == nsinit.ReplyError:
		return nil, &SetupError{Stage: r.Stage, Errno: syscall.Errno(r.Errno), Detail: r.Detail}
	case tty != nil && p.term == nil:
		p.Kill()
		return nil, errors.New("sandbox exec: the init sent no pty master")
	}
	p.pid = r.Pid
	return p, nil
}

// Terminal returns the master of the command's pty (ExecConfig.TTY), or nil:
// reading it gives what the command writes to its terminal (EIO once no process
// holds the terminal), writing it types, and SetSize resizes the terminal. It is
// non-blocking (deadlines work) and the caller closes it.
func (p *Process) Terminal() *os.File { return p.term }

// SetSize sets the size of a pty whose master is f, which signals SIGWINCH to the
// terminal's foreground process group.
func SetSize(f *os.File, size Winsize) error {
	if size.Rows == 0 || size.Cols == 0 {
		return fmt.Errorf("terminal size %dx%d: give at least one row and one column", size.Cols, size.Rows)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	}); err != nil {
		return err
	}
	if ierr != nil {
		return fmt.Errorf("set terminal size: %w", ierr)
	}
	return nil
}

// deliver records a reply of the init about this process, and the pty master
// that may come with ReplyStarted (closed unless kept).
func (p *Process) deliver(r *nsinit.Reply, term *os.File) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if term != nil && (r.Kind != nsinit.ReplyStarted || p.term != nil) {
		term.Close()
		term = nil
	}
	switch r.Kind {
	case nsinit.ReplyStarted:
		p.start, p.term = r, term
		close(p.started)
	case nsinit.ReplyError:
		p.start = r
		close(p.started)
		close(p.exited)
		close(p.gone)
	case nsinit.ReplyExit:
		p.exit = r
		close(p.exited)
	case nsinit.ReplyGone:
		p.end = r
		if p.exit == nil { // cannot happen: the init reports the exit first
			close(p.exited)
		}
		close(p.gone)
	}
}

// initGone closes whatever the init will never answer now.
func (p *Process) initGone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range []chan struct{}{p.started, p.exited, p.gone} {
		select {
		case <-c:
		default:
			close(c)
		}
	}
}

// Pid returns the command's pid inside the sandbox.
func (p *Process) Pid() int { return p.pid }

// Wait waits until the command's main process has exited and returns its status
// and the usage of every process of the command reaped until then. Processes it
// left behind keep running until Kill. If the sandbox ended first, the Exit says
// SIGKILL (and the error is nil) when Kill or Destroy of the sandbox ended it, and
// the error wraps ErrNoReport otherwise.
func (p *Process) Wait() (Exit, error) {
	<-p.exited
	p.mu.Lock()
	r := p.exit
	p.mu.Unlock()
	e := Exit{ExitCode: -1, Landlock: p.s.cl.landlock}
	if r == nil {
		if p.s.killed.Load() {
			e.Signal = syscall.SIGKILL
			return e, nil
		}
		return e, fmt.Errorf("sandbox process: %w", ErrNoReport)
	}
	ws := syscall.WaitStatus(r.WaitStatus)
	if ws.Exited() {
		e.ExitCode = ws.ExitStatus()
	} else if ws.Signaled() {
		e.Signal = ws.Signal()
	}
	e.Rusage = rusageOf(r.Rusage)
	return e, nil
}

// Signal sends sig to every live process of the command (its main process, its
// session, every descendant and every orphan attributed to it). It does nothing
// once the command has been killed.
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.gone:
		return nil
	default:
	}
	err := p.s.cl.send(&nsinit.Request{Op: nsinit.OpSignal, ID: p.id, Signal: int(sig)})
	if err != nil && p.s.killed.Load() {
		return nil // the sandbox is being destroyed: everything dies anyway
	}
	return err
}

// Kill SIGKILLs every process of the command, repeatedly, until none is left,
// and returns once they are reaped (or after 5 s, with the number of survivors).
// Other commands of the sandbox are not touched. Kill is idempotent.
func (p *Process) Kill() (Cleanup, error) {
	p.killOnce.Do(func() {
		select {
		case <-p.gone:
			return
		default:
		}
		if err := p.s.cl.send(&nsinit.Request{Op: nsinit.OpKill, ID: p.id}); err != nil && !p.s.killed.Load() {
			p.killErr = err
		}
	})
	if p.killErr != nil {
		return Cleanup{}, p.killErr
	}
	<-p.gone
	p.mu.Lock()
	r := p.end
	p.mu.Unlock()
	if r == nil {
		// The init died: its pid namespace, and every process in it, died too.
		if p.s.killed.Load() {
			return Cleanup{}, nil
		}
		return Cleanup{}, fmt.Errorf("sandbox process: %w", ErrNoReport)
	}
	return Cleanup{Rusage: rusageOf(r.Rusage), Survivors: r.Survivors}, nil
}

func rusageOf(r nsinit.Rusage) Rusage {
	return Rusage{User: time.Duration(r.UserNS), Sys: time.Duration(r.SysNS), MaxRSS: r.MaxRSSKB << 10}
}

// WorkspaceDir returns an O_PATH descriptor of the persistent sandbox's
// /workspace as the sandbox sees it (the overlay), opened by its init after the
// pivot. Host-side file operations go through it (as /proc/self/fd/N), never
// through the upper layer, which must not be written while the overlay is
// mounted. It is nil for a one-shot sandbox, stays valid until Destroy and must
// not be closed by the caller.
func (s *Sandbox) WorkspaceDir() *os.File {
	if s.cl == nil {
		return nil
	}
	return s.cl.wsDir
}

// Landlock returns what Landlock enforced in a persistent sandbox (as in
// Exit.Landlock).
func (s *Sandbox) Landlock() string {
	if s.cl == nil {
		return ""
	}
	return s.cl.landlock
}
