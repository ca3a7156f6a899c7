package env

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/runner"
)

// Event kinds.
const (
	EventStdout = "stdout"
	EventStderr = "stderr"
	EventExit   = "exit"
)

// process is a command started in the background: its events as they happen
// (spooled to disk for Events and resumption), its stdin, and its end.
type process struct {
	id  string
	cmd *runner.Command

	mu      sync.Mutex
	spool   *spool // every event, Seq 1-based; nil once the process is forgotten
	seq     int64
	changed chan struct{} // closed and replaced on every event
	done    chan struct{} // closed with the exit event
	result  *runner.Result
	err     error

	stdinMu sync.Mutex
	stdin   *os.File // the pipe's write end; nil once closed
}

// emit spools an event, then wakes its followers. An event the spool could not
// take (the state directory's disk is full) is lost, and its Seq with it: the
// followers see the gap.
func (p *process) emit(kind string, data []byte, res *runner.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	if p.spool != nil {
		_ = p.spool.append(Event{Seq: p.seq, Kind: kind, Data: data, Result: res})
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// forget closes and removes the spool of a process nobody can ask about any more.
func (p *process) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spool != nil {
		p.spool.close()
		os.Remove(p.spool.f.Name())
		p.spool = nil
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// leave closes the spool of a process whose environment is left (see
// environment.leave) and keeps it for the next Manager: nothing more is
// written to it, so a running command's ends there as a crash's does (lost).
func (p *process) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spool != nil {
		p.spool.close()
		p.spool = nil
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// streamWriter turns a command's live output into events.
type streamWriter struct {
	p    *process
	kind string
}

func (w streamWriter) Write(b []byte) (int, error) {
	w.p.emit(w.kind, append([]byte(nil), b...), nil)
	return len(b), nil
}

// Start runs a command in the background and returns its id in the environment.
// Its output arrives as Events; WriteStdin feeds it; Signal signals it; Wait
// returns its Result. It ends with its own end, its timeout, or the environment.
func (m *Manager) Start(ctx context.Context, owner Owner, id string, r ExecRequest) (string, error) {
	e, done, err := m.use(owner, id)
	if err != nil {
		return "", err
	}
	defer done()
	if err := e.running(); err != nil {
		return "", err
	}
	spec, out, err := e.spec(r)
	if err != nil {
		return "", err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return "", err
	}
	p := &process{changed: make(chan struct{}), done: make(chan struct{}), stdin: inW}
	spec.Stdin = inR
	out.stdout.next = streamWriter{p, EventStdout}
	out.stderr.next = streamWriter{p, EventStderr}

	e.mu.Lock()
	if e.destroyed {
		e.mu.Unlock()
		inR.Close()
		inW.Close()
		return "", fmt.Errorf("environment %s: %w", e.id, ErrDestroyed)
	}
	e.nextProc++
	p.id = "p" + strconv.Itoa(e.nextProc)
	e.bg.Add(1) // under mu, before teardown can wait for it
	e.mu.Unlock()
	if p.spool, err = createSpool(filepath.Join(e.dir, p.id+".events")); err != nil {
		inR.Close()
		inW.Close()
		out.remove()
		e.bg.Done()
		return "", err
	}

	// The environment's context, not the request's: the command outlives the call.
	cmd, err := runner.StartIn(e.ctx, e.sandbox(), spec)
	if spec.TTY == nil {
		inR.Close() // the command has its own copy
	}
	if err != nil {
		inR.Close()
		inW.Close()
		out.remove()
		p.forget()
		e.bg.Done()
		if errors.Is(err, runner.ErrInvalidSpec) {
			return "", fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return "", err
	}
	p.cmd = cmd
	if len(r.Stdin) > 0 {
		p.stdinMu.Lock()
		go func() {
			defer p.stdinMu.Unlock()
			_, _ = inW.Write(r.Stdin) // EPIPE if it exits without reading
		}()
	}
	e.mu.Lock()
	e.procs[p.id] = p
	e.mu.Unlock()
	go func() {
		defer e.bg.Done()
		res, err := cmd.Wait()
		if spec.TTY != nil {
			inR.Close() // the runner typed it into the terminal until now
		}
		if res != nil {
			e.keepOutputs(owner, p.id, res, out)
		}
		out.remove()
		p.closeStdin()
		p.mu.Lock()
		p.result, p.err = res, err
		p.mu.Unlock()
		p.emit(EventExit, nil, res)
		close(p.done)
		e.retire(p.id)
	}()
	return p.id, nil
}

// Lost reports whether r is the end Recover gave a background command that ran
// when its environment's server stopped: it did not end by itself, and what it
// did is not known.
func Lost(r *runner.Result) bool { return r != nil && r.Error == lostError }

// retire remembers a finished process, forgetting the oldest past KeepFinished.
func (e *environment) retire(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finished = append(e.finished, id)
	for len(e.finished) > e.m.cfg.KeepFinished {
		e.procs[e.finished[0]].forget()
		delete(e.procs, e.finished[0])
		e.finished = e.finished[1:]
	}
}

func (p *process) closeStdin() {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin != nil {
		p.stdin.Close()
		p.stdin = nil
	}
}

// proc looks up a background command; the environment call is marked in use
// until done is called.
func (m *Manager) proc(owner Owner, id, procID string) (*process, func(), error) {
	e, done, err := m.use(owner, id)
	if err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	p := e.procs[procID]
	e.mu.Unlock()
	if p == nil {
		done()
		return nil, nil, fmt.Errorf("process %s: %w", procID, ErrNotFound)
	}
	return p, done, nil
}

// Wait waits for a background command's Result, or for ctx.
func (m *Manager) Wait(ctx context.Context, owner Owner, id, procID string) (*runner.Result, error) {
	p, done, err := m.proc(owner, id, procID)
	if err != nil {
		return nil, err
	}
	defer done()
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result, p.err
}

// Events streams a background command's events with Seq greater than after, as
// they happen, ending with the exit event (or when ctx ends, or the command is
// forgotten). Every event is replayed from the command's spool, however old: a
// Seq that jumps means the spool could not take an event (its disk was full).
func (m *Manager) Events(ctx context.Context, owner Owner, id, procID string, after int64) (<-chan Event, error) {
	if after < 0 {
		return nil, fmt.Errorf("%w: after %d is negative", ErrInvalid, after)
	}
	p, done, err := m.proc(owner, id, procID)
	if err != nil {
		return nil, err
	}
	ch := make(chan Event, 16)
	go func() {
		defer done() // a client following a command is not idle
		defer close(ch)
		next := after
		for {
			p.mu.Lock()
			sp, changed := p.spool, p.changed
			var i, j int
			var offs []int64
			if sp != nil {
				i, j = sp.after(next), len(sp.seqs)
				j = min(j, i+eventBatch)
				offs = sp.offs[:j+1] // what is indexed never changes
			}
			p.mu.Unlock()
			if sp == nil {
				return
			}
			evs, err := sp.read(offs, i, j)
			if err != nil {
				return // the process was forgotten meanwhile, its spool closed
			}
			for _, ev := range evs {
				select {
				case ch <- ev:
				case <-ctx.Done():
					return
				}
				next = ev.Seq
				if ev.Kind == EventExit {
					return
				}
			}
			if len(evs) == eventBatch {
				continue
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

// eventBatch is how many events Events reads from a spool at a time.
const eventBatch = 256

// WriteStdin feeds a background command; eof closes its stdin after data. It
// blocks while the command does not read (a pipe holds 64 KiB), until ctx ends.
func (m *Manager) WriteStdin(ctx context.Context, owner Owner, id, procID string, data []byte, eof bool) error {
	p, done, err := m.proc(owner, id, procID)
	if err != nil {
		return err
	}
	defer done()
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		return fmt.Errorf("%w: the process's stdin is closed", ErrInvalid)
	}
	if len(data) > 0 {
		if dl, ok := ctx.Deadline(); ok {
			p.stdin.SetWriteDeadline(dl)
		}
		stop := context.AfterFunc(ctx, func() { p.stdin.SetWriteDeadline(time.Now()) })
		_, err := p.stdin.Write(data)
		stop()
		p.stdin.SetWriteDeadline(time.Time{})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: write stdin: the process does not read it any more", ErrInvalid)
		}
	}
	if eof {
		p.stdin.Close()
		p.stdin = nil
	}
	return nil
}

// Resize changes the size of a background command's terminal (ExecRequest.TTY).
// It does nothing once the command is over.
func (m *Manager) Resize(ctx context.Context, owner Owner, id, procID string, size runner.TTY) error {
	p, done, err := m.proc(owner, id, procID)
	if err != nil {
		return err
	}
	defer done()
	if p.cmd == nil { // restored (see Recover): over
		return nil
	}
	if err := p.cmd.Resize(size); err != nil {
		if errors.Is(err, runner.ErrInvalidSpec) {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return err
	}
	return nil
}

// Signal sends a signal ("TERM", "SIGKILL", 9…) to every process of a background
// command. It does nothing once the command is over.
func (m *Manager) Signal(ctx context.Context, owner Owner, id, procID string, sig string) error {
	s, err := parseSignal(sig)
	if err != nil {
		return err
	}
	p, done, err := m.proc(owner, id, procID)
	if err != nil {
		return err
	}
	defer done()
	if p.cmd != nil { // nil: restored (see Recover), over
		p.cmd.Signal(s)
	}
	return nil
}
