package sandbox

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// reservedTargets are the sandbox's own directories: a mount may be neither on
// nor under one of them, nor above one (which would hide it).
var reservedTargets = []string{"/proc", "/dev", "/sys", "/etc", "/tmp", DefaultDir,
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// CheckMount checks what can be checked of m without the host: a known mode, an
// absolute clean source, and a target that the sandbox does not use itself.
// Start also checks the source on the host (CheckMount's rules plus: an existing
// directory reached through no symlink).
func CheckMount(m Mount) error {
	switch m.Mode {
	case "", MountReadOnly, MountReadWrite, MountCopyOnWrite:
	default:
		return fmt.Errorf("mount %s: mode %q: use ro, rw or cow", m.Target, m.Mode)
	}
	for _, p := range []struct{ what, path string }{{"source", m.Source}, {"target", m.Target}} {
		switch {
		case p.path == "":
			return fmt.Errorf("mount: empty %s", p.what)
		case !path.IsAbs(p.path):
			return fmt.Errorf("mount %s %q: not an absolute path", p.what, p.path)
		case path.Clean(p.path) != p.path || strings.Contains(p.path, "/../") || strings.HasSuffix(p.path, "/.."):
			return fmt.Errorf("mount %s %q: not a clean path (no \"..\", \".\", \"//\" or trailing \"/\")", p.what, p.path)
		case strings.ContainsRune(p.path, 0):
			return fmt.Errorf("mount %s: contains a NUL byte", p.what)
		}
	}
	if m.Target == "/" {
		return errors.New("mount target /: the sandbox's root is its own")
	}
	for _, r := range reservedTargets {
		if m.Target == r || strings.HasPrefix(m.Target, r+"/") || strings.HasPrefix(r, m.Target+"/") {
			return fmt.Errorf("mount target %s: %s is the sandbox's own; mount elsewhere, e.g. under /opt or /mnt", m.Target, r)
		}
	}
	if m.Size < 0 {
		return fmt.Errorf("mount %s: negative size", m.Target)
	}
	return nil
}

// checkMounts checks every mount and that no two targets nest.
func checkMounts(ms []Mount) error {
	for i, m := range ms {
		if err := CheckMount(m); err != nil {
			return err
		}
		for _, o := range ms[:i] {
			if o.Target == m.Target || strings.HasPrefix(m.Target, o.Target+"/") || strings.HasPrefix(o.Target, m.Target+"/") {
				return fmt.Errorf("mount targets %s and %s overlap", o.Target, m.Target)
			}
		}
	}
	return nil
}

// ParseMount parses the command line's HOST:PATH[:MODE], MODE one of ro (the
// default), rw and cow, and checks the result (CheckMount).
func ParseMount(s string) (Mount, error) {
	var m Mount
	parts := strings.Split(s, ":")
	switch len(parts) {
	case 2:
		m = Mount{Source: parts[0], Target: parts[1], Mode: MountReadOnly}
	case 3:
		m = Mount{Source: parts[0], Target: parts[1], Mode: MountMode(parts[2])}
	default:
		return Mount{}, fmt.Errorf("--mount %q: use HOST:PATH or HOST:PATH:MODE, MODE ro, rw or cow", s)
	}
	if err := CheckMount(m); err != nil {
		return Mount{}, fmt.Errorf("--mount %q: %w", s, err)
	}
	return m, nil
}
