package sandbox

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Layer is a sealed sandbox's workspace upper layer (Seal): a detached,
// read-only mount of it that keeps its tmpfs alive after the sandbox is gone,
// so that sealing copies nothing. Sandboxes started with it (Config.Layers)
// each mount it read-only below an upper layer of their own; none can change it
// (the mount is read-only, and an overlay never writes a lower layer). Its
// methods are safe for concurrent use; Close it once no sandbox is being
// started with it (a running sandbox holds its own mount).
type Layer struct {
	tree     *os.File
	uid, gid int // the sealed sandbox's host user, who owns what it wrote
}

// Seal ends the sandbox as Destroy does and keeps its workspace's upper layer
// as a Layer. Every process is killed first, frozen or not (cgroup kill), so
// nothing writes the layer once it is taken: a snapshot of the files, not of
// the processes. It needs an overlay workspace and root (UpperDir).
func (s *Sandbox) Seal() (*Layer, error) {
	up := s.UpperDir()
	if up == "" || !s.id.root {
		return nil, errors.New("sandbox: seal: only a root agentbox's overlay workspace has an upper layer to seal")
	}
	if err := s.cg.Kill(); err != nil {
		return nil, fmt.Errorf("sandbox: seal: %w", err)
	}
	tree, err := detachedTree(up, nil)
	if err != nil {
		return nil, &MissingError{Mechanism: "detached mounts", Err: err}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(int(tree.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		tree.Close()
		return nil, fmt.Errorf("sandbox: seal: make read-only: %w", err)
	}
	l := &Layer{tree: tree, uid: s.id.uid, gid: s.id.gid}
	if n, err := s.Destroy(); err != nil || n != 0 {
		l.Close()
		return nil, fmt.Errorf("sandbox: seal: destroy: %d processes survived: %w", n, err)
	}
	return l, nil
}

// Dir returns a path through which the host reads the layer (for a diff),
// valid while it is open.
func (l *Layer) Dir() string { return fmt.Sprintf("/proc/self/fd/%d", l.tree.Fd()) }

// Close lets go of the layer; its files go with the last sandbox using it.
func (l *Layer) Close() error { return l.tree.Close() }

// prepareLayers passes the init a clone of each of s.cfg.Layers, idmapped so
// that what the sealed sandbox's user wrote belongs to this one's.
func (s *Sandbox) prepareLayers(add func(*os.File) int) ([]int, error) {
	if len(s.cfg.Layers) == 0 {
		return nil, nil
	}
	if !s.id.root || forcePaths {
		return nil, &MissingError{Mechanism: "workspace layers", Err: errors.New("a layer is mounted idmapped, which needs agentbox to run as root")}
	}
	var fds []int
	for _, l := range s.cfg.Layers {
		fd, err := unix.OpenTree(int(l.tree.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return nil, &MissingError{Mechanism: "clone of a detached mount", Err: err}
		}
		tree := os.NewFile(uintptr(fd), "layer")
		n := add(tree) // closed by Start from here on
		ns, err := idmapOwner(l.uid, l.gid, s.id)
		if err != nil {
			return nil, &MissingError{Mechanism: "idmapped workspace layer", Err: err}
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY, Userns_fd: uint64(ns.Fd())}
		err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr)
		ns.Close()
		if err != nil {
			return nil, &MissingError{Mechanism: "idmapped workspace layer", Err: err}
		}
		fds = append(fds, n)
	}
	return fds, nil
}
