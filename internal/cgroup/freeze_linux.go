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
	var err error
	if c.version == 2 {
		err = freezeV2(c.dir, time.Now().Add(freezeTimeout))
	} else {
		err = freeze(c.dirs[Freezer], time.Now().Add(freezeTimeout))
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrTimeout, err)
		}
	}
	if err == nil {
		err = fn()
	}
	var thawErr error
	if c.version == 2 {
		thawErr = writeFile(filepath.Join(c.dir, "cgroup.freeze"), "0")
		if errors.Is(thawErr, fs.ErrNotExist) {
			thawErr = nil
		}
	} else {
		thawErr = thaw(c.dirs[Freezer])
	}
	if thawErr != nil {
		thawErr = fmt.Errorf("cgroup %s: thaw: %w", c.name, thawErr)
	}
	return errors.Join(err, thawErr)
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
