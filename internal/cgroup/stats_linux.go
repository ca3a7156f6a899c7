package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of cpuacct.stat: USER_HZ is 100 on every Linux architecture
// (it is ABI, unlike the kernel's internal HZ).
const userHZ = 100

// Stats reads the group's usage. CPU time and the counters include tasks that have
// already exited.
func (c *Cgroup) Stats() (Stats, error) {
	var s Stats
	var err error
	if c.version == 2 {
		err = c.statsV2(&s)
	} else {
		err = c.statsV1(&s)
	}
	if err != nil {
		return s, fmt.Errorf("cgroup %s: stats: %w", c.name, err)
	}
	return s, nil
}

func (c *Cgroup) statsV1(s *Stats) error {
	if dir, ok := c.dirs[CPUAcct]; ok {
		user, uerr := readInt(filepath.Join(dir, "cpuacct.usage_user"))
		sys, serr := readInt(filepath.Join(dir, "cpuacct.usage_sys"))
		if uerr == nil && serr == nil { // nanoseconds, Linux 4.6 and later
			s.CPUUser, s.CPUSystem = time.Duration(user), time.Duration(sys)
		} else {
			st, err := readKeyed(filepath.Join(dir, "cpuacct.stat"))
			if err != nil {
				return err
			}
			s.CPUUser = time.Duration(st["user"]) * time.Second / userHZ
			s.CPUSystem = time.Duration(st["system"]) * time.Second / userHZ
		}
	}
	if dir, ok := c.dirs[Memory]; ok {
		var err error
		if s.MemoryPeak, err = readInt(filepath.Join(dir, "memory.max_usage_in_bytes")); err != nil {
			return err
		}
		oom, err := readKeyed(filepath.Join(dir, "memory.oom_control"))
		if err != nil {
			return err
		}
		s.OOMKills = oom["oom_kill"] // Linux 4.13 and later
	}
	if dir, ok := c.dirs[Pids]; ok {
		return readPids(dir, s)
	}
	return nil
}

func (c *Cgroup) statsV2(s *Stats) error {
	// cpu.stat is there with or without the cpu controller.
	st, err := readKeyed(filepath.Join(c.dir, "cpu.stat"))
	if err != nil {
		return err
	}
	s.CPUUser = time.Duration(st["user_usec"]) * time.Microsecond
	s.CPUSystem = time.Duration(st["system_usec"]) * time.Microsecond
	// The rest exists only when the controller is enabled (memory.peak: 5.19+).
	if s.MemoryPeak, err = readInt(filepath.Join(c.dir, "memory.peak")); absent(err) {
		err = nil
	}
	if err != nil {
		return err
	}
	ev, err := readKeyed(filepath.Join(c.dir, "memory.events"))
	if err != nil && !absent(err) {
		return err
	}
	s.OOMKills = ev["oom_kill"]
	if exists(filepath.Join(c.dir, "pids.current")) {
		return readPids(c.dir, s)
	}
	return nil
}

// Hits reads only the counters of limits hit, what a command of a persistent
// sandbox compares before and after it runs: two files where Stats reads six.
func (c *Cgroup) Hits() (Hits, error) {
	var h Hits
	var err error
	if c.version == 2 {
		err = c.hitsIn(c.dir, "memory.events", c.dir, &h)
	} else {
		err = c.hitsIn(c.dirs[Memory], "memory.oom_control", c.dirs[Pids], &h)
	}
	if err != nil {
		return h, fmt.Errorf("cgroup %s: hits: %w", c.name, err)
	}
	return h, nil
}

// readHits reads a control file of Hits through a descriptor kept open: a read at
// offset 0 makes the kernel generate the file anew, and an exec reads two of them
// twice (runner: before and after it), where opening and closing them was most of
// Hits' cost. The descriptor is used under mu, so Delete cannot close it between.
func (c *Cgroup) readHits(path string) (map[string]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fd, ok := c.hitFiles[path]
	if !ok {
		var err error
		if fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		if c.hitFiles == nil {
			c.hitFiles = map[string]int{}
		}
		c.hitFiles[path] = fd
	}
	var buf [4096]byte
	for {
		n, err := unix.Pread(fd, buf[:], 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == len(buf): // never for these files; read it whole
			return readKeyed(path)
		}
		return parseKeyed(string(buf[:n])), nil
	}
}

// hitsIn reads oom_kill from mem/oomFile and max from pids/pids.events; a file
// absent (its controller is not enabled there) or a directory not given counts 0.
func (c *Cgroup) hitsIn(mem, oomFile, pids string, h *Hits) error {
	if mem != "" {
		ev, err := c.readHits(filepath.Join(mem, oomFile))
		if err != nil && !absent(err) {
			return err
		}
		h.OOMKills = ev["oom_kill"]
	}
	if pids != "" {
		ev, err := c.readHits(filepath.Join(pids, "pids.events"))
		if err != nil && !absent(err) {
			return err
		}
		h.PidsLimitHits = ev["max"]
	}
	return nil
}

// readPids reads pids.events and pids.current, which have the same format on v1
// and v2.
func readPids(dir string, s *Stats) error {
	ev, err := readKeyed(filepath.Join(dir, "pids.events"))
	if err != nil {
		return err
	}
	s.PidsLimitHits = ev["max"]
	s.Pids, err = readInt(filepath.Join(dir, "pids.current"))
	return err
}

func absent(err error) bool { return errors.Is(err, fs.ErrNotExist) }
