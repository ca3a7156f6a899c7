package cgroup

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Delete removes the group's directories (and any child groups) from every
// hierarchy. The group must be empty: call Kill first. Deleting a group that is
// already gone succeeds.
func (c *Cgroup) Delete() error {
	c.mu.Lock()
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	for _, fd := range c.hitFiles {
		unix.Close(fd)
	}
	c.hitFiles = nil
	c.mu.Unlock()
	var errs []error
	for _, dir := range c.paths {
		if err := removeTree(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cgroup %s: delete: %w", c.name, err)
	}
	return nil
}
