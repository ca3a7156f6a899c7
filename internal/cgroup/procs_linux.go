package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// AddProc moves the process pid (all its threads) into the group, in every
// hierarchy on v1. Start the child stopped at a gate and add it before opening the
// gate, so that nothing it runs escapes the limits.
func (c *Cgroup) AddProc(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("cgroup %s: add pid %d: not a process id", c.name, pid)
	}
	for _, dir := range c.paths {
		if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroup %s: add pid %d: %w", c.name, pid, err)
		}
	}
	return nil
}

// FD returns a descriptor of the group's directory for clone3's CLONE_INTO_CGROUP
// (syscall.SysProcAttr UseCgroupFD and CgroupFD), which starts a child inside the
// group with no window outside it. Only v2 has one directory to clone into; on
// v1 it returns ErrNoFD and callers use AddProc. The descriptor belongs to the
// group and stays open until Delete.
func (c *Cgroup) FD() (int, error) {
	if c.version != 2 {
		return -1, ErrNoFD
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd >= 0 {
		return c.fd, nil
	}
	fd, err := unix.Open(c.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("cgroup %s: open %s: %w", c.name, c.dir, err)
	}
	c.fd = fd
	return fd, nil
}

// tasks lists the ids in the group and its child groups, deduplicated: thread ids
// from v1 "tasks" files (kill(2) on a thread id signals its whole process), process
// ids from v2 "cgroup.procs". A group that no longer exists has none.
func (c *Cgroup) tasks() ([]int, error) {
	file := "tasks"
	if c.version == 2 {
		file = "cgroup.procs"
	}
	var out []int
	for _, root := range c.paths {
		dirs, err := subdirs(root)
		if err != nil {
			return nil, err
		}
		for _, dir := range dirs {
			s, err := readString(filepath.Join(dir, file))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			ids, err := parsePids(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(dir, file), err)
			}
			out = append(out, ids...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// empty reports whether no task is left in the group: cgroup.events "populated 0"
// on v2 (it covers child groups), no id in any tasks file on v1.
func (c *Cgroup) empty() (bool, error) {
	if c.version == 2 {
		ev, err := readKeyed(filepath.Join(c.dir, "cgroup.events"))
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return ev["populated"] == 0, nil
	}
	ids, err := c.tasks()
	return len(ids) == 0, err
}
