package cgroup

import (
	"errors"
	"os"
	"slices"
	"strings"
)

// Reap kills and removes every group under parent (DefaultParent when empty) whose
// name starts with prefix: the leftovers of a run that crashed before Delete. It
// returns the names it removed. The prefix follows the rules of Options.Name, so
// it can never be empty and match every group of every other user of the parent.
func Reap(parent, prefix string) ([]string, error) {
	if parent == "" {
		parent = DefaultParent
	}
	if err := validParent(parent); err != nil {
		return nil, &OptionError{Field: "parent", Reason: err.Error()}
	}
	if err := validName(prefix); err != nil {
		return nil, &OptionError{Field: "prefix", Reason: err.Error()}
	}
	l, err := readLayout()
	if err != nil {
		return nil, err
	}
	return reap(l, parent, prefix)
}

func reap(l layout, parent, prefix string) ([]string, error) {
	// List every hierarchy: a crash during New can leave a group in some only.
	var names []string
	for _, dir := range parentDirs(l, parent) {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	var reaped []string
	var errs []error
	for _, name := range names {
		c := build(l, parent, name, DefaultKillTimeout)
		if err := c.Kill(); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.Delete(); err != nil {
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, name)
	}
	return reaped, errors.Join(errs...)
}
