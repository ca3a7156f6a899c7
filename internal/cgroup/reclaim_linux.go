package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Reclaim asks the kernel to take back from the group all the memory it can
// without killing anything: clean page cache (files read, and written files
// once written back) and, where the group may swap, anonymous and tmpfs pages.
// Its tasks keep running, or stay frozen; a page they touch again is read back
// and charged to the group as before. On v1 it writes memory.force_empty, on
// v2 memory.reclaim (Linux 5.19). What cannot be reclaimed stays charged:
// Reclaim does not fail for it (MemoryUsage tells what is left).
func (c *Cgroup) Reclaim() error {
	var err error
	if c.version == 2 {
		// A request past what can be had ends with EAGAIN once the kernel has
		// taken what it could.
		if err = writeFile(filepath.Join(c.dir, "memory.reclaim"), "1T"); errors.Is(err, unix.EAGAIN) {
			err = nil
		}
	} else if mem, ok := c.dirs[Memory]; ok {
		err = writeFile(filepath.Join(mem, "memory.force_empty"), "0")
	} else {
		err = &ControllerError{Controller: Memory, Reason: "not enabled for the group"}
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: reclaim: %w", c.name, err)
	}
	return nil
}

// MemoryUsage returns the bytes charged to the group now (page cache and tmpfs
// included): v1 memory.usage_in_bytes, v2 memory.current.
func (c *Cgroup) MemoryUsage() (int64, error) {
	var n int64
	var err error
	if c.version == 2 {
		n, err = readInt(filepath.Join(c.dir, "memory.current"))
	} else if mem, ok := c.dirs[Memory]; ok {
		n, err = readInt(filepath.Join(mem, "memory.usage_in_bytes"))
	} else {
		err = &ControllerError{Controller: Memory, Reason: "not enabled for the group"}
	}
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: memory usage: %w", c.name, err)
	}
	return n, nil
}
