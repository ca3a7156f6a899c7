package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// freezeTimeout bounds how long Frozen waits for every task to freeze (a task in
// uninterruptible sleep holds the group in FREEZING).
const freezeTimeout = 2 * time.Second

// Frozen freezes every task of the group, runs fn, and thaws the group, so that fn
// sees the group's files (an overlay's upper layer, say) at rest. It holds Kill's
// lock meanwhile: Kill thaws the group at its end and would end the freeze early.
// If the group does not freeze within two seconds fn is not run and the group is
// thawed; the error matches ErrTimeout.
func (c *Cgroup) Frozen(fn func() error) error {
	c.killMu.Lock()
	defer c.killMu.Unlock()
	if c.paused {
		return fn() // already at rest; Resume thaws it, not fn's end
	}
	err := c.freeze()
	if err == nil {
		err = fn()
	}
	return errors.Join(err, c.thaw())
}

// Pause freezes every task of the group until Resume: a frozen task runs no
// instruction and so uses no CPU, and tasks it forks are born frozen. Frozen runs
// its function without thawing meanwhile; Kill still kills (and ends the pause).
// Pausing a paused group does nothing. If the group does not freeze within two
// seconds it is thawed and the error matches ErrTimeout.
func (c *Cgroup) Pause() error {
	c.killMu.Lock()
	defer c.killMu.Unlock()
	if c.paused {
		return nil
	}
	if err := c.freeze(); err != nil {
		return errors.Join(err, c.thaw())
	}
	c.paused = true
	return nil
}

// Resume thaws a group that Pause froze; the tasks continue where they stopped.
// Resuming a group that is not paused does nothing.
func (c *Cgroup) Resume() error {
	c.killMu.Lock()
	defer c.killMu.Unlock()
	if !c.paused {
		return nil
	}
	if err := c.thaw(); err != nil {
		return err
	}
	c.paused = false
	return nil
}

// Paused reports whether Pause froze the group (and neither Resume nor Kill has
// thawed it since).
func (c *Cgroup) Paused() bool {
	c.killMu.Lock()
	defer c.killMu.Unlock()
	return c.paused
}

// freeze freezes the group within freezeTimeout (in killMu).
func (c *Cgroup) freeze() error {
	until := time.Now().Add(freezeTimeout)
	if c.version == 2 {
		return freezeV2(c.dir, until)
	}
	if err := freeze(c.dirs[Freezer], until); err != nil {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return nil
}

// thaw thaws the group (in killMu).
func (c *Cgroup) thaw() error {
	var err error
	if c.version == 2 {
		err = writeFile(filepath.Join(c.dir, "cgroup.freeze"), "0")
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		err = thaw(c.dirs[Freezer])
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: thaw: %w", c.name, err)
	}
	return nil
}

// freezeV2 writes cgroup.freeze and waits until cgroup.events says frozen.
func freezeV2(dir string, until time.Time) error {
	if err := writeFile(filepath.Join(dir, "cgroup.freeze"), "1"); err != nil {
		return fmt.Errorf("freeze: %w", err)
	}
	delay := 100 * time.Microsecond
	for {
		ev, err := readKeyed(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return fmt.Errorf("freeze: %w", err)
		}
		if ev["frozen"] == 1 {
			return nil
		}
		if time.Now().After(until) {
			return fmt.Errorf("freeze: not frozen after %v: %w", freezeTimeout, ErrTimeout)
		}
		time.Sleep(delay)
		delay = min(2*delay, 10*time.Millisecond)
	}
}
