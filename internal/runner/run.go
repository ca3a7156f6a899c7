package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/terminal"
)

// ErrSetup wraps failures of agentbox itself to set up or tear down a run; the Result
// then has exit code 125.
var ErrSetup = errors.New("agentbox setup failed")

// child is a started command: a process tree at the process level, or a sandbox.
type child interface {
	// wait blocks until the command's main process has exited.
	wait() exitInfo
	// signal sends sig to every process of the run.
	signal(sig syscall.Signal)
	// cleanup ends whatever of the run is still alive (SIGTERM, grace, SIGKILL; grace 0
	// kills at once) and returns only when nothing is left or it has given up.
	cleanup(grace time.Duration) cleanupInfo
}

type exitInfo struct {
	code     int            // exit code, when sig is 0
	sig      syscall.Signal // the signal that killed the main process, or 0
	usage    usage
	startErr *startError // the command could not be executed (127, 126)
	waitErr  error       // agentbox failed (125)
	landlock int         // Landlock ABI enforced
}

type cleanupInfo struct {
	survivors int
	usage     usage // of processes reaped during cleanup
	oom       bool
	pidsHit   bool
	rootFull  bool   // the image root's upper layer is full (Sandbox.RootFull)
	cgroup    *usage // cgroup-wide figures, which supersede the sum where present
	network   []egress.Event
	err       error
}

type usage struct {
	user, sys time.Duration
	maxRSS    int64 // bytes
}

func (u *usage) add(o usage) {
	u.user += o.user
	u.sys += o.sys
	u.maxRSS = max(u.maxRSS, o.maxRSS)
}

// stdio is what the child's descriptors 0-2 are, plus what the parent must close.
type stdio struct {
	stdin, stdout, stderr *os.File
}

// Run executes spec and returns how it ended. It returns only after every process of the
// run is gone (or Result.Survivors says how many could not be killed). A non-nil error
// means the spec was invalid (ErrInvalidSpec; no Result) or agentbox itself failed
// (ErrSetup; the Result has exit code 125). A command that cannot be found or executed is
// not an error of Run: its Result has exit code 127 or 126.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.TTY != nil {
		return nil, invalid("a terminal (--tty) needs an environment: create one and run the command in it")
	}
	return run(ctx, spec.withDefaults(), start)
}

// terminalChild is a child running on a terminal (Spec.TTY).
type terminalChild interface {
	child
	// terminal is the pty's master, which the child keeps open until closeTerminal.
	terminal() *os.File
	resize(TTY) error
	closeTerminal()
}

// starter launches the command of a run: start (a process tree or a fresh
// sandbox) or, for RunIn, a command in an existing sandbox.
type starter func(s Spec, io stdio, res *Result) (child, error)

// run is Run after validation: everything but how the command is started is the
// same for Run and RunIn.
func run(ctx context.Context, s Spec, start starter) (*Result, error) {
	res := &Result{Isolation: s.Isolation}
	started := time.Now()
	defer func() { res.DurationMS = time.Since(started).Milliseconds() }()

	if s.TTY != nil {
		return runTerminal(ctx, s, res, start)
	}
	stdin, closeStdin, err := openStdin(s.Stdin)
	if err != nil {
		return setupFailed(res, err)
	}
	defer closeStdin()
	outR, outW, err := os.Pipe()
	if err != nil {
		return setupFailed(res, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return setupFailed(res, err)
	}
	outFile, err := createOutputFile(s.StdoutFile)
	if err == nil {
		defer closeIfNotNil(outFile)
		var errFile *os.File
		errFile, err = createOutputFile(s.StderrFile)
		if err == nil {
			defer closeIfNotNil(errFile)
			return runWith(ctx, s, res, stdio{stdin, outW, errW}, outR, errR, outFile, errFile, start)
		}
	}
	for _, f := range []*os.File{outR, outW, errR, errW} {
		f.Close()
	}
	return setupFailed(res, err)
}

// runTerminal is run for a command on a terminal: its one output stream is the
// pty's master, into which Stdin is typed.
func runTerminal(ctx context.Context, s Spec, res *Result, start starter) (*Result, error) {
	outFile, err := createOutputFile(s.StdoutFile)
	if err != nil {
		return setupFailed(res, err)
	}
	defer closeIfNotNil(outFile)
	ch, err := start(s, stdio{}, res)
	if err != nil {
		return startFailed(res, err)
	}
	tc, ok := ch.(terminalChild)
	if !ok {
		ch.cleanup(0)
		return setupFailed(res, errors.New("this isolation level has no terminals"))
	}
	defer tc.closeTerminal()
	if s.Stdin != nil {
		// Ends at the input's end or, once the terminal is closed, its next byte.
		go io.Copy(tc.terminal(), s.Stdin)
	}
	return supervise(ctx, s, res, ch, tc.terminal(), nil, outFile, nil)
}

func runWith(ctx context.Context, s Spec, res *Result, io stdio, outR, errR *os.File, outFile, errFile *os.File, start starter) (*Result, error) {
	defer outR.Close()
	defer errR.Close()
	ch, err := start(s, io, res)
	// The child holds its own copies of the write ends; ours must go so EOF can come.
	io.stdout.Close()
	io.stderr.Close()
	if err != nil {
		return startFailed(res, err)
	}
	return supervise(ctx, s, res, ch, outR, errR, outFile, errFile)
}

// startFailed is the Result of a command that did not start: exit code 127 or 126
// when it could not be executed, else agentbox's failure.
func startFailed(res *Result, err error) (*Result, error) {
	var se *startError
	if errors.As(err, &se) {
		res.ExitCode, res.Error = se.status, se.Error()
		return res, nil
	}
	return setupFailed(res, err)
}

// supervise runs a started child to its end under the spec's limits, reading its
// output from outR and errR (nil: no such stream).
func supervise(ctx context.Context, s Spec, res *Result, ch child, outR, errR *os.File, outFile, errFile *os.File) (*Result, error) {
	var stop stopper
	stop.init()
	outCap, errCap := newCapture(s.Limits.OutputLimit), newCapture(s.Limits.OutputLimit)
	budget := &outputBudget{left: s.Limits.OutputTotal, onOver: func() { stop.stop(LimitOutput, false) }}
	var readers sync.WaitGroup
	for _, r := range []struct {
		from *os.File
		c    *capture
		live io.Writer
		file *os.File
	}{{outR, outCap, s.Stdout, outFile}, {errR, errCap, s.Stderr, errFile}} {
		if r.from == nil {
			continue
		}
		readers.Add(1)
		go func() { defer readers.Done(); pump(r.from, r.c, r.live, writerOf(r.file), budget) }()
	}

	timer := time.AfterFunc(s.Limits.Timeout, func() { stop.stop(LimitTimeout, false) })
	defer timer.Stop()
	ctxDone := context.AfterFunc(ctx, func() { stop.stop(LimitNone, true) })
	defer ctxDone()

	exited := make(chan exitInfo, 1)
	go func() { exited <- ch.wait() }()

	var ei exitInfo
	select {
	case ei = <-exited:
	case <-stop.done:
		// Ending early: TERM the whole tree, give it the grace, then KILL.
		ch.signal(syscall.SIGTERM)
		select {
		case ei = <-exited:
		case <-time.After(s.Limits.KillGrace):
			ch.signal(syscall.SIGKILL)
			ei = <-exited
		}
	}
	grace := s.Limits.KillGrace
	if stop.stopped() {
		grace = 0 // the tree already had its grace
	}
	ci := ch.cleanup(grace)
	if ei.startErr != nil {
		ei.code = ei.startErr.status
		res.Error = ei.startErr.Error()
	}

	// Every writer is gone now; anything still holding a pipe escaped us, so bound the
	// wait for EOF instead of hanging on it.
	deadline := time.Now().Add(time.Second)
	for _, r := range []*os.File{outR, errR} {
		if r != nil {
			r.SetReadDeadline(deadline)
		}
	}
	readers.Wait()

	fillResult(res, s, ei, ci, &stop)
	res.Stdout, res.StdoutTruncated, res.StdoutBytes = outCap.result()
	res.Stderr, res.StderrTruncated, res.StderrBytes = errCap.result()
	if ci.err != nil {
		res.ExitCode, res.Signal, res.Error = StatusInternal, nil, ci.err.Error()
		return res, fmt.Errorf("%w: cleanup: %w", ErrSetup, ci.err)
	}
	if ei.waitErr != nil {
		res.ExitCode, res.Signal, res.Error = StatusInternal, nil, ei.waitErr.Error()
		return res, fmt.Errorf("%w: %w", ErrSetup, ei.waitErr)
	}
	return res, nil
}

func fillResult(res *Result, s Spec, ei exitInfo, ci cleanupInfo, stop *stopper) {
	sig := ei.sig
	res.ExitCode = ei.code
	if sig != 0 {
		res.ExitCode = 128 + int(sig)
		res.Signal = signalName(sig)
	}
	res.LandlockABI = ei.landlock
	u := ei.usage
	u.add(ci.usage)
	if ci.cgroup != nil {
		u = *ci.cgroup
	}
	res.CPUUserMS, res.CPUSysMS, res.MemoryPeakBytes = u.user.Milliseconds(), u.sys.Milliseconds(), u.maxRSS
	res.Survivors = ci.survivors
	if s.Sandbox.Network != nil {
		res.Network = append([]egress.Event{}, ci.network...)
	}
	res.OOMKilled = ci.oom
	res.Limit, res.Cancelled = stop.reason()
	res.TimedOut = res.Limit == LimitTimeout
	if res.Limit != LimitNone || res.Cancelled {
		return
	}
	switch {
	case ci.oom:
		res.Limit = LimitMemory
	case sig == syscall.SIGXCPU,
		sig == syscall.SIGKILL && s.Limits.CPUTime > 0 && u.user+u.sys >= s.Limits.CPUTime:
		res.Limit = LimitCPU
	case sig == syscall.SIGXFSZ:
		res.Limit = LimitFileSize
	case ci.pidsHit && res.ExitCode != 0:
		res.Limit = LimitPids
	case ci.rootFull && res.ExitCode != 0:
		res.Limit = LimitRootSize
	}
}

// stopper records the first reason a run was ended early.
type stopper struct {
	once      sync.Once
	done      chan struct{}
	mu        sync.Mutex
	limit     Limit
	cancelled bool
}

func (s *stopper) init() { s.done = make(chan struct{}) }

func (s *stopper) stop(l Limit, cancelled bool) {
	s.once.Do(func() {
		s.mu.Lock()
		s.limit, s.cancelled = l, cancelled
		s.mu.Unlock()
		close(s.done)
	})
}

func (s *stopper) stopped() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *stopper) reason() (Limit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit, s.cancelled
}

func setupFailed(res *Result, err error) (*Result, error) {
	res.ExitCode = StatusInternal
	res.Error = err.Error()
	return res, fmt.Errorf("%w: %w", ErrSetup, err)
}

// startError is a command that could not be executed: not found or not executable.
type startError struct {
	status int
	err    error
}

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// devNull is opened once and shared: every child reading it reads nothing.
var (
	devNullOnce sync.Once
	devNull     *os.File
	devNullErr  error
)

func openStdin(r io.Reader) (*os.File, func(), error) {
	switch f := r.(type) {
	case nil:
		devNullOnce.Do(func() { devNull, devNullErr = os.Open(os.DevNull) })
		return devNull, func() {}, devNullErr
	case *os.File:
		// A terminal is never handed over: through it the command could change its
		// modes (echo off, left off), size and exclusive flag, or make itself its
		// owner. The command reads a pipe agentbox fills from it instead.
		if !terminal.IsTerminal(f) {
			return f, func() {}, nil
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() {
		io.Copy(pw, r) // the child may stop reading; EPIPE ends the copy
		pw.Close()
	}()
	return pr, func() { pr.Close() }, nil
}

func writerOf(f *os.File) io.Writer {
	if f == nil {
		return nil
	}
	return f
}

func closeIfNotNil(f *os.File) {
	if f != nil {
		f.Close()
	}
}
