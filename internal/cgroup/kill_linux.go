package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Kill sends SIGKILL to every task in the group and returns once the group is
// empty, or fails with ErrTimeout after Options.KillTimeout. Processes that
// ignore signals, start new sessions or double-fork are still in the group, so
// they die too.
//
// v2 writes cgroup.kill, which the kernel applies to the whole subtree and to
// tasks forked meanwhile. v1 has no such file, so Kill freezes the group (a fork
// bomb cannot add tasks while it is frozen), lists and kills every task, thaws it
// so the signals are delivered, and repeats until it is empty.
func (c *Cgroup) Kill() error {
	c.killMu.Lock()
	defer c.killMu.Unlock()
	// A paused group is killed too: v1 rounds thaw it (SIGKILL is delivered on
	// thaw), v2's cgroup.kill kills frozen tasks. Either way the pause is over.
	c.paused = false
	// Usually the sandbox's init has already killed and reaped everything: an empty
	// group has no member left to fork, so there is nothing to freeze or kill.
	if empty, err := c.empty(); err == nil && empty {
		return nil
	}
	deadline := time.Now().Add(c.killTimeout)
	var lastErr error
	for round := 0; ; round++ {
		if c.version == 2 {
			lastErr = c.killV2()
		} else {
			lastErr = c.killV1(deadline)
		}
		// Give the dying tasks a moment to exit before another round.
		empty, err := c.waitEmpty(earliest(deadline, time.Now().Add(200*time.Millisecond)))
		if err != nil {
			return fmt.Errorf("cgroup %s: kill: %w", c.name, err)
		}
		if empty {
			return nil
		}
		if time.Now().After(deadline) {
			left, _ := c.tasks()
			msg := fmt.Sprintf("cgroup %s: %d tasks left after %v and %d rounds", c.name, len(left), c.killTimeout, round+1)
			if lastErr != nil {
				msg += fmt.Sprintf(" (last error: %v)", lastErr)
			}
			return fmt.Errorf("%s: %w", msg, ErrTimeout)
		}
	}
}

func (c *Cgroup) killV2() error {
	err := writeFile(filepath.Join(c.dir, "cgroup.kill"), "1")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // deleted: nothing to kill
	}
	return err
}

// killV1 is one freeze, kill, thaw round. It never leaves the group frozen.
func (c *Cgroup) killV1(deadline time.Time) error {
	freezer := c.dirs[Freezer]
	frozeErr := freeze(freezer, earliest(deadline, time.Now().Add(time.Second)))
	ids, listErr := c.tasks()
	for _, id := range ids {
		// ESRCH: it died since the listing. Anything else (EPERM) leaves it for the
		// next round and, in the end, the timeout.
		unix.Kill(id, unix.SIGKILL)
	}
	thawErr := thaw(freezer)
	return errors.Join(frozeErr, listErr, thawErr)
}

// freeze asks the v1 freezer to freeze the group and waits until it reports
// FROZEN or until the deadline (a task in uninterruptible sleep can hold it in
// FREEZING; the caller kills what it can and tries again).
func freeze(dir string, until time.Time) error {
	if dir == "" {
		return errors.New("no freezer hierarchy")
	}
	state := filepath.Join(dir, "freezer.state")
	delay := 100 * time.Microsecond
	for {
		// Writing FROZEN again retries the tasks that have not frozen yet.
		if err := writeFile(state, "FROZEN"); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted: nothing to freeze
			}
			return fmt.Errorf("freeze: %w", err)
		}
		s, err := readString(state)
		if err != nil {
			return fmt.Errorf("freeze: %w", err)
		}
		if strings.TrimSpace(s) == "FROZEN" {
			return nil
		}
		if time.Now().After(until) {
			return fmt.Errorf("freeze: still %s", strings.TrimSpace(s))
		}
		time.Sleep(delay)
		delay = min(2*delay, 10*time.Millisecond)
	}
}

func thaw(dir string) error {
	if dir == "" {
		return nil
	}
	err := writeFile(filepath.Join(dir, "freezer.state"), "THAWED")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("thaw: %w", err)
	}
	return nil
}

// waitEmpty polls until the group is empty or the time is up.
func (c *Cgroup) waitEmpty(until time.Time) (bool, error) {
	delay := 200 * time.Microsecond
	for {
		empty, err := c.empty()
		if err != nil || empty {
			return empty, err
		}
		if time.Now().After(until) {
			return false, nil
		}
		time.Sleep(delay)
		delay = min(2*delay, 10*time.Millisecond)
	}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
