package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// v2Controllers are the controllers a v2 group gets when the root offers them,
// limited or not, so that Stats can read them.
var v2Controllers = []string{Memory, Pids, CPU}

// createV2Dir makes the parent path, enables the controllers in every
// cgroup.subtree_control from the root down to the parent, and makes the group.
func createV2Dir(l layout, o Options) (*Cgroup, error) {
	c := build(l, o.Parent, o.Name, o.KillTimeout)
	required := o.required(2)
	offered := fields(filepath.Join(l.unified, "cgroup.controllers"))
	dir := l.unified
	for _, comp := range append([]string{""}, strings.Split(o.Parent, "/")...) {
		dir = filepath.Join(dir, comp)
		if err := unix.Mkdir(dir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("mkdir %s: %w", dir, err)
		}
		if err := enable(dir, offered, required); err != nil {
			return nil, err
		}
	}
	if err := c.makeDirs(); err != nil {
		return nil, err
	}
	if !exists(filepath.Join(c.dir, "cgroup.kill")) {
		c.Delete()
		return nil, &ControllerError{Controller: Freezer, Reason: "cgroup.kill is missing (Linux 5.14 or later is needed)"}
	}
	return c, nil
}

// enable turns on, in dir's children, each of v2Controllers that the root offers.
// Failing to enable a required one is an error: a cgroup with processes of its own
// cannot enable controllers for its children (the no-internal-process rule), and
// a delegated subtree may not be allowed to.
func enable(dir string, offered, required []string) error {
	on := fields(filepath.Join(dir, "cgroup.subtree_control"))
	for _, ctl := range v2Controllers {
		if slices.Contains(on, ctl) || !slices.Contains(offered, ctl) {
			continue
		}
		err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+ctl)
		if err != nil && slices.Contains(required, ctl) {
			hint := ""
			if errors.Is(err, unix.EBUSY) {
				hint = " (the cgroup has processes of its own; use a parent with none)"
			}
			return &ControllerError{Controller: ctl, Reason: fmt.Sprintf("enable in %s: %v%s", dir, err, hint)}
		}
	}
	return nil
}
