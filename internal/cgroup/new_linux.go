package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// New creates the group <hierarchy>/<Parent>/<Name> in every hierarchy it uses and
// applies the limits. It fails with a *ControllerError naming the controller when
// a limit (or, on v1, the freezer that Kill needs) cannot be had, and with ErrExist
// when the name is taken; it leaves nothing behind when it fails.
func New(opts Options) (*Cgroup, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	l, err := readLayout()
	if err != nil {
		return nil, err
	}
	return create(l, o)
}

func create(l layout, o Options) (*Cgroup, error) {
	for _, name := range o.required(l.version()) {
		if !l.has(name) {
			reason := "no v1 hierarchy carries it"
			if l.version() == 2 {
				reason = fmt.Sprintf("not in %s/cgroup.controllers", l.unified)
			}
			return nil, &ControllerError{Controller: name, Reason: reason}
		}
	}
	var c *Cgroup
	var err error
	switch l.version() {
	case 1:
		c = build(l, o.Parent, o.Name, o.KillTimeout)
		err = c.makeDirs()
	case 2:
		c, err = createV2Dir(l, o)
	default:
		return nil, &ControllerError{Controller: Freezer, Reason: "no cgroup filesystem is mounted"}
	}
	if err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", o.Name, err)
	}
	if err := c.limit(o); err != nil {
		c.Delete()
		return nil, fmt.Errorf("create cgroup %s: %w", o.Name, err)
	}
	return c, nil
}

// required lists the controllers a group with these options cannot do without.
func (o Options) required(version int) []string {
	var out []string
	if version == 1 {
		out = append(out, Freezer) // Kill: freeze, kill, thaw
	}
	if o.MemoryBytes > 0 {
		out = append(out, Memory)
	}
	if o.Pids > 0 {
		out = append(out, Pids)
	}
	if o.CPUs > 0 {
		out = append(out, CPU)
	}
	return out
}

// has reports whether the hierarchy runs go into carries the controller.
func (l layout) has(name string) bool {
	switch l.version() {
	case 1:
		_, ok := l.v1[name]
		return ok
	case 2:
		// cpuacct and freezer are built into v2 (cpu.stat, cgroup.kill); the
		// others must be offered by the root.
		return name == CPUAcct || name == Freezer ||
			slices.Contains(fields(filepath.Join(l.unified, "cgroup.controllers")), name)
	}
	return false
}

// build computes the directories of a group without touching the filesystem.
func build(l layout, parent, name string, killTimeout time.Duration) *Cgroup {
	c := &Cgroup{name: name, version: l.version(), killTimeout: killTimeout, fd: -1}
	if c.version == 2 {
		c.dir = filepath.Join(l.unified, parent, name)
		c.paths = []string{c.dir}
		return c
	}
	c.dirs = map[string]string{}
	// Freezer first: AddProc then puts a task where Kill can freeze it before
	// anywhere else.
	for _, ctl := range append([]string{Freezer}, controllers...) {
		mount, ok := l.v1[ctl]
		if !ok {
			continue
		}
		dir := filepath.Join(mount, parent, name)
		c.dirs[ctl] = dir
		if !slices.Contains(c.paths, dir) { // co-mounted, e.g. cpu,cpuacct
			c.paths = append(c.paths, dir)
		}
	}
	return c
}

// parentDirs returns the parent's directory in each hierarchy runs go into.
func parentDirs(l layout, parent string) []string {
	var out []string
	for _, dir := range build(l, parent, "x", 0).paths {
		out = append(out, filepath.Dir(dir))
	}
	return out
}

// makeDirs creates the group's directories, removing those it made on failure.
func (c *Cgroup) makeDirs() error {
	var made []string
	for _, dir := range c.paths {
		if err := mkdirIn(dir); err != nil {
			removeAll(made)
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("%s: %w", dir, ErrExist)
			}
			return err
		}
		made = append(made, dir)
	}
	return nil
}

// mkdirIn makes dir and, as needed, its parents. It tries again if a parent
// vanishes in between: a reaper may remove an empty parent at any time.
func mkdirIn(dir string) error {
	for attempt := 0; ; attempt++ {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return err
		}
		err := os.Mkdir(dir, 0o755)
		if !errors.Is(err, os.ErrNotExist) || attempt == 2 {
			return err
		}
	}
}

func removeAll(dirs []string) {
	for _, d := range dirs {
		removeTree(d) // best effort: the directory is new and empty
	}
}
