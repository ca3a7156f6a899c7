package cgroup

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// limit writes the limits of o into the group's files.
func (c *Cgroup) limit(o Options) error {
	if c.version == 2 {
		return c.limitV2(o)
	}
	return c.limitV1(o)
}

func (c *Cgroup) limitV1(o Options) error {
	if o.MemoryBytes > 0 {
		mem := c.dirs[Memory]
		v := strconv.FormatInt(o.MemoryBytes, 10)
		if err := writeFile(filepath.Join(mem, "memory.limit_in_bytes"), v); err != nil {
			return fmt.Errorf("set memory limit: %w", err)
		}
		// Swap off: memory+swap capped at the memory limit. Without swap
		// accounting (no memsw files) the next best is never swapping anonymous
		// memory of this group.
		if memsw := filepath.Join(mem, "memory.memsw.limit_in_bytes"); exists(memsw) {
			if err := writeFile(memsw, v); err != nil {
				return fmt.Errorf("set memory+swap limit: %w", err)
			}
		} else if err := writeFile(filepath.Join(mem, "memory.swappiness"), "0"); err != nil {
			return fmt.Errorf("set swappiness: %w", err)
		}
	}
	if o.Pids > 0 {
		if err := writeFile(filepath.Join(c.dirs[Pids], "pids.max"), strconv.FormatInt(o.Pids, 10)); err != nil {
			return fmt.Errorf("set pids limit: %w", err)
		}
	}
	if o.CPUs > 0 {
		cpu := c.dirs[CPU]
		if err := writeFile(filepath.Join(cpu, "cpu.cfs_period_us"), strconv.Itoa(cfsPeriod)); err != nil {
			return fmt.Errorf("set cpu period: %w", err)
		}
		if err := writeFile(filepath.Join(cpu, "cpu.cfs_quota_us"), strconv.FormatInt(cpuQuota(o.CPUs), 10)); err != nil {
			return fmt.Errorf("set cpu quota: %w", err)
		}
	}
	return nil
}

func (c *Cgroup) limitV2(o Options) error {
	if o.MemoryBytes > 0 {
		if err := writeFile(filepath.Join(c.dir, "memory.max"), strconv.FormatInt(o.MemoryBytes, 10)); err != nil {
			return fmt.Errorf("set memory limit: %w", err)
		}
		// memory.swap.max is absent only on kernels without swap support.
		if swap := filepath.Join(c.dir, "memory.swap.max"); exists(swap) {
			if err := writeFile(swap, "0"); err != nil {
				return fmt.Errorf("turn swap off: %w", err)
			}
		}
	}
	if o.Pids > 0 {
		if err := writeFile(filepath.Join(c.dir, "pids.max"), strconv.FormatInt(o.Pids, 10)); err != nil {
			return fmt.Errorf("set pids limit: %w", err)
		}
	}
	if o.CPUs > 0 {
		v := fmt.Sprintf("%d %d", cpuQuota(o.CPUs), cfsPeriod)
		if err := writeFile(filepath.Join(c.dir, "cpu.max"), v); err != nil {
			return fmt.Errorf("set cpu quota: %w", err)
		}
	}
	return nil
}
