package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// Where an image root's upper and work directories live in the state directory,
// beside the workspace's.
const (
	rootUpper = "root/upper"
	rootWork  = "root/work"
)

// prepareImage passes the init the image root of cfg.Image (or of a build
// sandbox): the store's layer tree as one detached, read-only, nosuid, nodev
// mount, and the directory holding the private upper layer. For a sandbox the
// tree is idmapped so that the image's user (Image.IDs) is the sandbox user and
// every other image id is nobody; for a build sandbox, whose user namespace maps
// the image's whole id range, it is not (see buildIdentity).
func (s *Sandbox) prepareImage(add func(*os.File) int) (*nsinit.Image, error) {
	if s.cfg.build != nil {
		return s.prepareBuild(add)
	}
	im := s.cfg.Image
	if im == nil {
		return nil, nil
	}
	switch {
	case !s.id.root:
		return nil, &MissingError{Mechanism: "image root", Err: errors.New("an image's layers are mounted idmapped, which needs agentbox to run as root")}
	case s.cfg.RootFS != "":
		return nil, errors.New("sandbox: give an image or a root file system, not both")
	case len(im.Layers) == 0 && !im.Host:
		return nil, fmt.Errorf("sandbox: image %s has no layers", im.ID)
	}
	uid, gid, err := im.IDs()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	ns, err := idmapOwner(image.IDBase+uid, image.IDBase+gid, s.id)
	if err != nil {
		return nil, &MissingError{Mechanism: "idmapped image mount", Err: err}
	}
	tree, err := layerTree(im.LayersDir, ns)
	ns.Close()
	if err != nil {
		return nil, &MissingError{Mechanism: "idmapped image mount", Err: err}
	}
	img := &nsinit.Image{Layers: nsinit.Source{FD: add(tree)}, Upper: rootUpper, Work: rootWork}
	if err := s.ensureState(); err != nil {
		return nil, err
	}
	if err := s.stateDir("root", 0o700); err != nil {
		return nil, err
	}
	// The root's upper layer has a size limit of its own: a tmpfs (or disk
	// layer) on the state directory's, detached with it (Destroy, ReapStale).
	// A leftover's is mounted already.
	if rootDir := filepath.Join(s.state, "root"); s.cfg.From == nil || !mountedOn(rootDir) {
		if err := s.mountLayer(rootDir, s.cfg.RootSize); err != nil {
			return nil, fmt.Errorf("image root: %w", err)
		}
	}
	for _, d := range []struct {
		name string
		perm os.FileMode
	}{{rootUpper, 0o755}, {rootWork, 0o700}} {
		if err := s.stateDir(d.name, d.perm); err != nil {
			return nil, err
		}
	}
	if im.Host {
		// The host's files are owned as the image user's are: host uid and gid
		// uid, gid are the sandbox user's (root's, for a host base).
		ns, err := idmapOwner(uid, gid, s.id)
		if err != nil {
			return nil, &MissingError{Mechanism: "idmapped host directories", Err: err}
		}
		img.HostDirs, err = hostDirs(ns, add, s.stateDir, rootUpper, rootWork)
		ns.Close()
		if err != nil {
			return nil, err
		}
		img.Host, img.HostEtc = true, image.HostEtc
	}
	state, err := detachedTree(s.state, nil)
	if err != nil {
		return nil, &MissingError{Mechanism: "detached mounts", Err: err}
	}
	img.State = nsinit.Source{FD: add(state)}
	for i := len(im.Layers) - 1; i >= 0; i-- {
		img.Lowers = append(img.Lowers, im.Layers[i].Rel)
	}
	if img.Sealed, err = s.prepareLayers(add, true); err != nil {
		return nil, err
	}
	return img, nil
}

// hostDirs passes the init the host's system directories (image.HostDirs) for
// an image root over them: each symlink as its target, each directory as a
// detached, read-only, nosuid, nodev clone idmapped through ns, whose overlay
// gets the upper directory upper/NAME and the work directory work.NAME, both
// made by mkdir (paths relative to the image's state directory, as upper and
// work are).
func hostDirs(ns *os.File, add func(*os.File) int, mkdir func(rel string, perm os.FileMode) error, upper, work string) ([]nsinit.HostDir, error) {
	var out []nsinit.HostDir
	for _, d := range image.HostDirs {
		fi, err := os.Lstat("/" + d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("host base: %w", err)
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink("/" + d)
			if err != nil {
				return nil, fmt.Errorf("host base: %w", err)
			}
			out = append(out, nsinit.HostDir{Name: d, Link: target})
		case fi.IsDir():
			hd := nsinit.HostDir{Name: d, Work: work + "." + d}
			if err := mkdir(upper+"/"+d, 0o755); err != nil {
				return nil, err
			}
			if err := mkdir(hd.Work, 0o700); err != nil {
				return nil, err
			}
			tree, err := layerTree("/"+d, ns)
			if err != nil {
				return nil, &MissingError{Mechanism: "idmapped host directories", Err: err}
			}
			hd.Tree = nsinit.Source{FD: add(tree)}
			out = append(out, hd)
		}
	}
	return out, nil
}

// layerTree clones dir as a detached, private, read-only, nosuid, nodev mount
// tree, idmapped through ns if it is not nil. Read-only is set on the clone
// before anyone else holds it, so nothing in the sandbox can write a layer even
// where the overlay would let it.
func layerTree(dir string, ns *os.File) (*os.File, error) {
	tree, err := detachedTree(dir, ns)
	if err != nil {
		return nil, err
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(int(tree.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		tree.Close()
		return nil, fmt.Errorf("make layers read-only: %w", err)
	}
	return tree, nil
}

// imageEnv returns the command's environment and working directory: the
// caller's, or the image config's where the caller gave none.
func imageEnv(im *image.Image, env []string, dir string) ([]string, string) {
	if im == nil {
		return env, dir
	}
	if env == nil {
		env = append([]string(nil), im.Config.Env...)
	}
	if dir == "" {
		dir = im.Config.WorkingDir
	}
	return env, dir
}

// commonDir is the deepest directory that holds every path of dirs (absolute,
// clean).
func commonDir(dirs []string) string {
	c := dirs[0]
	for _, d := range dirs[1:] {
		for c != "/" && d != c && !strings.HasPrefix(d, c+"/") {
			c = filepath.Dir(c)
		}
	}
	return c
}
