package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// readStatus keeps the last Message the init sends until the pipe closes, which
// happens when the init exits.
func (s *Sandbox) readStatus(r *os.File) {
	defer close(s.statusDone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m nsinit.Message
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			s.report = &m
		}
	}
	s.mark("report")
}

// Wait waits until the sandbox's init reports and says how the command ended. The
// init reports once the command has exited and every other process of the sandbox
// has been killed and reaped; it is exiting itself then, and Destroy reaps it. Wait
// returns the same result to every caller.
//
// The error is nil when the init reported (even a setup failure, which is in
// Exit.SetupErr) or when Kill ended the sandbox; it wraps ErrNoReport when the init
// died without reporting and nobody here killed it.
func (s *Sandbox) Wait() (Exit, error) {
	s.waitOnce.Do(s.wait)
	return s.exit, s.waitErr
}

func (s *Sandbox) wait() {
	<-s.statusDone
	m := s.report
	if m == nil || (m.Kind != nsinit.KindExit && m.Kind != nsinit.KindError) {
		// Its exit status is all there is to go by.
		m = nil
		s.reapInit()
	}
	s.mark("wait")
	e := Exit{ExitCode: -1}
	switch {
	case m != nil && m.Kind == nsinit.KindExit:
		ws := syscall.WaitStatus(m.WaitStatus)
		if ws.Exited() {
			e.ExitCode = ws.ExitStatus()
		} else if ws.Signaled() {
			e.Signal = ws.Signal()
		}
		e.Rusage = Rusage{
			User:   time.Duration(m.Rusage.UserNS),
			Sys:    time.Duration(m.Rusage.SysNS),
			MaxRSS: m.Rusage.MaxRSSKB << 10,
		}
	case m != nil && m.Kind == nsinit.KindError:
		e.SetupErr = &SetupError{Stage: m.Stage, Errno: syscall.Errno(m.Errno), Detail: m.Detail}
	default:
		st := s.cmd.ProcessState
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal()
		}
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			e.Rusage = Rusage{
				User:   time.Duration(ru.Utime.Nano()),
				Sys:    time.Duration(ru.Stime.Nano()),
				MaxRSS: ru.Maxrss << 10,
			}
		}
		if !s.killed.Load() {
			s.waitErr = fmt.Errorf("%w (%s)", ErrNoReport, st)
		}
	}
	if m != nil {
		e.InitUID, e.InitCapEff, e.Landlock = m.InitUID, m.InitCapEff, m.Landlock
	}
	e.Timings = s.timings(m)
	s.exit = e
}

// reapInit waits for the init process to be gone, once.
func (s *Sandbox) reapInit() {
	s.reapOnce.Do(func() {
		_ = s.cmd.Wait() // an *ExitError only restates the init's status
		s.unspawn()
	})
}

// timings merges the host's and the init's phase stamps (one clock) into phases.
func (s *Sandbox) timings(m *nsinit.Message) []Phase {
	s.stampMu.Lock()
	stamps := slices.Clone(s.stamps)
	s.stampMu.Unlock()
	if m != nil {
		stamps = append(stamps, m.Stamps...)
	}
	slices.SortStableFunc(stamps, func(a, b nsinit.Stamp) int {
		switch {
		case a.MonoNS < b.MonoNS:
			return -1
		case a.MonoNS > b.MonoNS:
			return 1
		}
		return 0
	})
	var out []Phase
	prev := s.startNS
	for _, st := range stamps {
		if st.MonoNS == 0 {
			continue
		}
		out = append(out, Phase{Name: st.Phase, Dur: time.Duration(st.MonoNS - prev)})
		prev = st.MonoNS
	}
	return out
}
