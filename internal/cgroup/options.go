package cgroup

import (
	"fmt"
	"math"
	"strings"
)

const (
	minMemory = 1 << 20
	minCPUs   = 0.01 // 1 ms of quota per 100 ms period: the kernel's minimum quota
	maxCPUs   = 1 << 16
	maxName   = 128
	// cfsPeriod is the CPU quota period in microseconds (the kernel default).
	cfsPeriod = 100000
)

// normalize validates o and fills in defaults.
func (o Options) normalize() (Options, error) {
	if err := validName(o.Name); err != nil {
		return o, &OptionError{Field: "Name", Reason: err.Error()}
	}
	if o.Parent == "" {
		o.Parent = DefaultParent
	}
	if err := validParent(o.Parent); err != nil {
		return o, &OptionError{Field: "Parent", Reason: err.Error()}
	}
	switch {
	case o.MemoryBytes < 0:
		return o, &OptionError{Field: "MemoryBytes", Reason: fmt.Sprintf("%d is negative", o.MemoryBytes)}
	case o.MemoryBytes > 0 && o.MemoryBytes < minMemory:
		return o, &OptionError{Field: "MemoryBytes", Reason: fmt.Sprintf("%d is below the 1 MiB minimum", o.MemoryBytes)}
	}
	if o.Pids < 0 {
		return o, &OptionError{Field: "Pids", Reason: fmt.Sprintf("%d is negative", o.Pids)}
	}
	switch {
	case math.IsNaN(o.CPUs) || math.IsInf(o.CPUs, 0):
		return o, &OptionError{Field: "CPUs", Reason: fmt.Sprintf("%v is not a number of CPUs", o.CPUs)}
	case o.CPUs < 0:
		return o, &OptionError{Field: "CPUs", Reason: fmt.Sprintf("%v is negative", o.CPUs)}
	case o.CPUs > 0 && o.CPUs < minCPUs:
		return o, &OptionError{Field: "CPUs", Reason: fmt.Sprintf("%v is below the minimum of %v", o.CPUs, minCPUs)}
	case o.CPUs > maxCPUs:
		return o, &OptionError{Field: "CPUs", Reason: fmt.Sprintf("%v is above the maximum of %v", o.CPUs, maxCPUs)}
	}
	if o.KillTimeout < 0 {
		return o, &OptionError{Field: "KillTimeout", Reason: fmt.Sprintf("%v is negative", o.KillTimeout)}
	}
	if o.KillTimeout == 0 {
		o.KillTimeout = DefaultKillTimeout
	}
	return o, nil
}

// cpuQuota converts a number of CPUs into microseconds of quota per cfsPeriod.
func cpuQuota(cpus float64) int64 {
	return int64(math.Round(cpus * cfsPeriod))
}

// validName accepts one path component that cannot climb out of the parent, hide
// itself, or need quoting: [A-Za-z0-9][A-Za-z0-9._-]*, at most maxName long.
func validName(name string) error {
	if name == "" {
		return fmt.Errorf("empty")
	}
	if len(name) > maxName {
		return fmt.Errorf("%d characters, more than %d", len(name), maxName)
	}
	for i, r := range name {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if i == 0 && !alnum {
			return fmt.Errorf("%q must start with a letter or digit", name)
		}
		if !alnum && r != '.' && r != '_' && r != '-' {
			return fmt.Errorf("%q has %q; only letters, digits, '.', '_' and '-' are allowed", name, r)
		}
	}
	return nil
}

// validParent accepts a relative slash-separated path of valid names.
func validParent(parent string) error {
	for _, comp := range strings.Split(parent, "/") {
		if err := validName(comp); err != nil {
			return fmt.Errorf("component of %q: %w", parent, err)
		}
	}
	return nil
}
