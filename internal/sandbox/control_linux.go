package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// Terminate asks the init to send SIGTERM to every process of the sandbox (the
// init forwards it with kill(-1), which from pid 1 reaches all of them). If the
// command has not started yet it is terminated as soon as it has.
func (s *Sandbox) Terminate() error {
	s.ctlMu.Lock()
	defer s.ctlMu.Unlock()
	if s.ctl == nil {
		return ErrDone
	}
	if _, err := s.ctl.Write([]byte{nsinit.CtlTerminate}); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			return nil // the init is gone: nothing left to terminate
		}
		return fmt.Errorf("sandbox terminate: %w", err)
	}
	return nil
}

// Kill ends the sandbox at once: SIGKILL to the init, upon which the kernel kills
// every process of its pid namespace, then the cgroup-wide kill for good measure,
// which returns once the cgroup is empty: after a nil Kill nothing of the sandbox
// runs, so UpperDir can be read as final. Wait then reports Signal SIGKILL unless
// the command had already exited.
//
// The cgroup is checked once the init has been reaped (or after reapWait): the
// kernel reaps the init of a pid namespace only after every other process of it,
// so the check then finds the group empty at the first look, with no freeze and
// no polling while the init's namespaces are torn down.
func (s *Sandbox) Kill() error {
	if s.destroyed.Load() {
		return ErrDone
	}
	s.killed.Store(true)
	var errs []error
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, err)
	}
	// A paused init takes its SIGKILL only once thawed; thawed after the signal,
	// no process of the sandbox runs another instruction of its own.
	if err := s.cg.Resume(); err != nil {
		errs = append(errs, err)
	}
	reaped := make(chan struct{})
	go func() {
		s.reapInit()
		close(reaped)
	}()
	t := time.NewTimer(reapWait)
	select {
	case <-reaped:
	case <-t.C: // stuck (in an uninterruptible sleep, say): the cgroup's kill has a deadline
	}
	t.Stop()
	if err := s.cg.Kill(); err != nil { // thaws a paused sandbox too
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sandbox kill: %w", err)
	}
	return nil
}

// reapWait bounds how long Kill waits for the init to be reaped before it kills
// through the cgroup.
const reapWait = time.Second

// Destroy kills whatever is left, confirms through the cgroup that nothing survived,
// unmounts and removes the private upper layer (read it before, after Kill) and
// removes the cgroup. The sandbox's other mounts live in its own mount namespace and
// went away with it. survivors is the number of tasks still in the cgroup after the
// kill, which must be 0.
func (s *Sandbox) Destroy() (survivors int, err error) { return s.destroy(false) }

// Leave ends a kept sandbox (Config.Keep) as Destroy does, but leaves what its
// Leftover names (its state directory, with the upper layers, and its host id
// reservation) for a later Start From it or Discard, as agentbox's death would.
// A sandbox that keeps nothing is destroyed.
func (s *Sandbox) Leave() (survivors int, err error) { return s.destroy(s.Leftover() != Leftover{}) }

func (s *Sandbox) destroy(keep bool) (survivors int, err error) {
	s.destroyMu.Lock()
	defer s.destroyMu.Unlock()
	if s.destroyed.Load() {
		return 0, ErrDone
	}
	defer s.destroyed.Store(true)
	var errs []error
	// Kill the init before closing the control pipe: the close alone would also
	// make the init kill everything, but then Wait would report the command as
	// terminated by its own init.
	s.killed.Store(true)
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, err)
	}
	// A paused init takes its SIGKILL only once thawed; thawed after the signal,
	// no process of the sandbox runs another instruction of its own.
	if err := s.cg.Resume(); err != nil {
		errs = append(errs, err)
	}
	s.closeControl()
	_, _ = s.Wait()
	s.reapInit()
	if s.cl != nil {
		s.cl.close()
	}
	if s.egress != nil {
		s.egress.close()
	}
	// The pid namespace died with its init; the cgroup-wide kill catches anything
	// that would not have, and returns once the cgroup is empty.
	if err := s.cg.Kill(); err != nil {
		errs = append(errs, err)
	}
	st, err := s.cg.Stats()
	if err != nil {
		errs = append(errs, err)
	}
	survivors = int(st.Pids)
	// The upper layer goes before the cgroup its tmpfs pages are charged to; a
	// kept one is unlocked (a Start From it takes only an unlocked one), and its
	// pages stay charged to nothing once the cgroup goes.
	if keep {
		s.unlockState()
	} else if err := s.removeState(); err != nil {
		errs = append(errs, err)
	}
	if survivors == 0 {
		if err := s.cg.Delete(); err != nil {
			errs = append(errs, err)
		}
	} else {
		errs = append(errs, fmt.Errorf("%d processes survived; cgroup %s kept", survivors, s.cg.Name()))
	}
	if keep {
		s.id.unlock()
	} else {
		s.id.release()
	}
	if err := errors.Join(errs...); err != nil {
		return survivors, fmt.Errorf("sandbox destroy: %w", err)
	}
	return survivors, nil
}
