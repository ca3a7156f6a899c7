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
	case im.Host:
		return nil, fmt.Errorf("sandbox: image %s is built on the host's system directories, which a sandbox cannot mount yet; build it from a Debian suite or an image", im.ID)
	case len(im.Layers) == 0:
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
	layers := add(tree)
	if err := s.ensureState(); err != nil {
		return nil, err
	}
	for _, d := range []struct {
		name string
		perm os.FileMode
	}{{"root", 0o700}, {rootUpper, 0o755}, {rootWork, 0o700}} {
		if err := s.stateDir(d.name, d.perm); err != nil {
			return nil, err
		}
	}
	state, err := detachedTree(s.state, nil)
	if err != nil {
		return nil, &MissingError{Mechanism: "detached mounts", Err: err}
	}
	lowers := make([]string, 0, len(im.Layers))
	for i := len(im.Layers) - 1; i >= 0; i-- {
		lowers = append(lowers, im.Layers[i].Rel)
	}
	return &nsinit.Image{Layers: nsinit.Source{FD: layers}, Lowers: lowers,
		State: nsinit.Source{FD: add(state)}, Upper: rootUpper, Work: rootWork}, nil
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
