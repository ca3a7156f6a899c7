package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
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
	root     *os.File // the image root's upper layer; nil for a sandbox on no image
	uid, gid int      // the sealed sandbox's host user, who owns what it wrote
}

// Seal ends the sandbox as Destroy does and keeps its workspace's upper layer
// (and its image root's, on an image) as a Layer. Every process is killed first, frozen or not (cgroup kill), so
// nothing writes the layer once it is taken: a snapshot of the files, not of
// the processes. It needs an overlay workspace and root (UpperDir): without
// them it fails with ErrUnsupported and the sandbox goes on; after any other
// failure it is gone.
func (s *Sandbox) Seal() (*Layer, error) {
	up := s.UpperDir()
	if up == "" || !s.id.root {
		return nil, fmt.Errorf("%w: seal: only a root agentbox's overlay workspace has an upper layer to seal", ErrUnsupported)
	}
	if err := s.cg.Kill(); err != nil {
		return nil, fmt.Errorf("sandbox: seal: %w", err)
	}
	l := &Layer{uid: s.id.uid, gid: s.id.gid}
	var err error
	if l.tree, err = sealedTree(up); err != nil {
		return nil, err
	}
	if s.cfg.Image != nil {
		if l.root, err = sealedTree(filepath.Join(s.state, rootUpper)); err != nil {
			l.Close()
			return nil, err
		}
	}
	if n, err := s.Destroy(); err != nil || n != 0 {
		l.Close()
		return nil, fmt.Errorf("sandbox: seal: destroy: %d processes survived: %w", n, err)
	}
	return l, nil
}

// sealedTree clones dir as a detached, read-only, nosuid, nodev mount.
func sealedTree(dir string) (*os.File, error) {
	tree, err := detachedTree(dir, nil)
	if err != nil {
		return nil, &MissingError{Mechanism: "detached mounts", Err: err}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(int(tree.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		tree.Close()
		return nil, fmt.Errorf("sandbox: seal: make read-only: %w", err)
	}
	return tree, nil
}

// Bytes is what the layer holds: the used bytes of its file systems (the
// workspace's state tmpfs or disk layer, and the image root's), as statfs
// counts them. It does not change: the layer is read-only.
func (l *Layer) Bytes() (int64, error) {
	n, err := usedBytes(int(l.tree.Fd()))
	if err == nil && l.root != nil {
		var r int64
		r, err = usedBytes(int(l.root.Fd()))
		n += r
	}
	if err != nil {
		return 0, fmt.Errorf("sandbox: layer size: %w", err)
	}
	return n, nil
}

// UpperBytes is what Seal would make a Layer of now (see Layer.Bytes); 0
// without an overlay workspace.
func (s *Sandbox) UpperBytes() (int64, error) {
	if s.UpperDir() == "" {
		return 0, nil
	}
	dirs := []string{s.state}
	if s.cfg.Image != nil {
		dirs = append(dirs, filepath.Join(s.state, "root"))
	}
	var total int64
	for _, d := range dirs {
		f, err := os.OpenFile(d, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, fmt.Errorf("sandbox: upper layer size: %w", err)
		}
		n, err := usedBytes(int(f.Fd()))
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("sandbox: upper layer size: %w", err)
		}
		total += n
	}
	return total, nil
}

// usedBytes is the used space of the file system fd is on: a tmpfs's pages,
// an ext4's data and directory blocks (its own overhead excluded).
func usedBytes(fd int) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, nil
}

// Dir returns a path through which the host reads the layer (for a diff),
// valid while it is open.
func (l *Layer) Dir() string { return fmt.Sprintf("/proc/self/fd/%d", l.tree.Fd()) }

// Close lets go of the layer; its files go with the last sandbox using it.
func (l *Layer) Close() error {
	if l.root != nil {
		l.root.Close()
	}
	return l.tree.Close()
}

// prepareLayers passes the init a clone of each of s.cfg.Layers' workspace
// trees (root: their image roots' trees, for a sandbox on an image), idmapped
// so that what the sealed sandbox's user wrote belongs to this one's.
func (s *Sandbox) prepareLayers(add func(*os.File) int, root bool) ([]nsinit.Source, error) {
	if len(s.cfg.Layers) == 0 {
		return nil, nil
	}
	if !s.id.root || forcePaths {
		return nil, &MissingError{Mechanism: "workspace layers", Err: errors.New("a layer is mounted idmapped, which needs agentbox to run as root")}
	}
	var out []nsinit.Source
	for _, l := range s.cfg.Layers {
		tree := l.tree
		if root {
			if tree = l.root; tree == nil {
				continue // sealed on no image: nothing of the root to carry
			}
		}
		fd, err := unix.OpenTree(int(tree.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return nil, &MissingError{Mechanism: "clone of a detached mount", Err: err}
		}
		n := add(os.NewFile(uintptr(fd), "layer")) // closed by Start from here on
		ns, err := idmapOwner(l.uid, l.gid, s.id)
		if err != nil {
			return nil, &MissingError{Mechanism: "idmapped layer", Err: err}
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY, Userns_fd: uint64(ns.Fd())}
		err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr)
		ns.Close()
		if err != nil {
			return nil, &MissingError{Mechanism: "idmapped layer", Err: err}
		}
		out = append(out, nsinit.Source{FD: n})
	}
	return out, nil
}
