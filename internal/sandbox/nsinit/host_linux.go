package nsinit

import (
	"errors"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// hostBase is the part of an image root that comes from the host (Image.Host):
// the skeleton lower layer, the overlays of the host's directories, made but
// not yet mounted, and the /etc entries to bind from the host.
type hostBase struct {
	skel   string
	mounts []hostMount
	etc    []string
}

type hostMount struct {
	name string
	fd   int
}

// skelEmpty are the empty directories of a host base's skeleton: the rest of
// the Filesystem Hierarchy Standard's top level, where build steps put what
// they make (/opt, /root's caches, /var).
var skelEmpty = []struct {
	name string
	perm os.FileMode
}{
	{"home", 0o755}, {"media", 0o755}, {"mnt", 0o755}, {"opt", 0o755}, {"root", 0o700},
	{"run", 0o755}, {"srv", 0o755}, {"var", 0o755}, {"var/tmp", 0o1777},
}

// skelDir holds the skeleton lower layer, on the root tmpfs (which the image
// overlay keeps alive after it is detached).
const skelDir = stage + "/skel"

// prepareHost builds the skeleton of img's host base and one overlay per host
// directory that no layer hides, with layers (the lower directories of the
// image's layers, top first) over the host's. state is where img.State is
// attached. Overlayfs does not look through the mounts inside a lower layer, so
// a host directory cannot simply be bound into one: each is an overlay of its
// own, whose upper directory is the root's upper directory's copy of it, so
// that the root holds the same tree as one overlay over the host would.
func prepareHost(img *Image, layers []string, state string) (*hostBase, error) {
	hb := &hostBase{skel: skelDir}
	if err := os.MkdirAll(skelDir, 0o755); err != nil {
		return nil, at("mkdir skeleton", err)
	}
	// The host's own are not part of the base, but their empty places are:
	// Landlock lets the commands write only the root's existing directories.
	for _, d := range skelEmpty {
		if err := os.Mkdir(skelDir+"/"+d.name, d.perm); err != nil {
			return nil, atf(err, "skeleton /%s", d.name)
		}
		if err := os.Chmod(skelDir+"/"+d.name, d.perm); err != nil {
			return nil, atf(err, "skeleton /%s", d.name)
		}
	}
	for _, d := range img.HostDirs {
		if !local(d.Name) || filepath.Base(d.Name) != d.Name {
			return nil, atf(unix.EINVAL, "host directory %q: not a name", d.Name)
		}
		if d.Link != "" {
			if err := os.Symlink(d.Link, skelDir+"/"+d.Name); err != nil {
				return nil, atf(err, "skeleton /%s", d.Name)
			}
			continue
		}
		if err := os.Mkdir(skelDir+"/"+d.Name, 0o755); err != nil {
			return nil, atf(err, "skeleton /%s", d.Name)
		}
		lowers, hidden, err := layersOver(layers, d.Name, true)
		if err != nil {
			return nil, err
		}
		if hidden {
			// The layers replaced the host's directory: the root overlay shows theirs.
			unix.Close(d.Tree.FD)
			continue
		}
		fd, err := hostOverlay(d, lowers, state, img.Upper)
		if err != nil {
			return nil, err
		}
		hb.mounts = append(hb.mounts, hostMount{name: d.Name, fd: fd})
	}
	for _, name := range img.HostEtc {
		if !local(name) {
			return nil, atf(unix.EINVAL, "host /etc entry %q: not a relative path", name)
		}
		_, hidden, err := layersOver(layers, path.Join("etc", name), false)
		if err != nil {
			return nil, err
		}
		if hidden {
			continue
		}
		bind, err := skelEntry(name)
		if err != nil {
			return nil, err
		}
		if bind {
			hb.etc = append(hb.etc, name)
		}
	}
	return hb, nil
}

// layersOver returns the layers' directories at rel (top first) that lie over
// the host's, and whether a layer hides the host's: some layer holds rel (or
// one of its parents) as something other than a directory (a file, a link, a
// whiteout) or as an opaque directory, or holds rel at all unless merge. Where
// hidden, the root overlay shows the layers' version as it is.
func layersOver(layers []string, rel string, merge bool) (over []string, hidden bool, err error) {
	for _, l := range layers {
		p := l
		for _, c := range splitPath(rel) {
			p += "/" + c
			fi, err := os.Lstat(p)
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err != nil {
				return nil, false, atf(err, "stat layer /%s", rel)
			}
			whole := p == l+"/"+rel
			if !fi.IsDir() || opaque(p) || (whole && !merge) {
				return nil, true, nil
			}
			if whole {
				over = append(over, p)
			}
		}
	}
	return over, false, nil
}

func splitPath(rel string) []string {
	var out []string
	for rel != "." && rel != "" {
		out = append([]string{path.Base(rel)}, out...)
		rel = path.Dir(rel)
	}
	return out
}

// opaque reports whether the layer directory p is marked opaque (it hides what
// lies below it), as overlayfs's "userxattr" mode reads the mark.
func opaque(p string) bool {
	buf := make([]byte, 4)
	n, err := unix.Lgetxattr(p, "user.overlay.opaque", buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

// hostOverlay makes (does not mount) the overlay of host directory d: lowers
// over d.Tree, upper Upper/d.Name and work d.Work in state.
func hostOverlay(d HostDir, lowers []string, state, upper string) (int, error) {
	tree := stage + "/host-" + d.Name
	if err := os.Mkdir(tree, 0o700); err != nil {
		return -1, at("mkdir stage", err)
	}
	if d.Tree.IsZero() {
		return -1, atf(unix.EINVAL, "host directory /%s: no tree", d.Name)
	}
	if err := attach(d.Tree, tree); err != nil {
		return -1, atf(err, "attach host /%s", d.Name)
	}
	if !local(d.Work) {
		return -1, atf(unix.EINVAL, "host directory /%s: work %q is not a relative path", d.Name, d.Work)
	}
	return makeOverlay(append(lowers, tree), state+"/"+upper+"/"+d.Name, state+"/"+d.Work, "host /"+d.Name)
}

// skelEntry makes the skeleton's copy of host entry /etc/name: a symlink is
// recreated (it resolves in the sandbox's root), a directory or regular file
// becomes an empty one to bind the host's over (bind is then true). A missing
// entry or another kind of file is left out.
func skelEntry(name string) (bind bool, err error) {
	src, dst := "/etc/"+name, skelDir+"/etc/"+name
	fi, err := os.Lstat(src)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, atf(err, "stat host %s", src)
	}
	if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return false, atf(err, "skeleton %s", path.Dir(src))
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return false, atf(err, "readlink %s", src)
		}
		return false, atf(os.Symlink(target, dst), "skeleton %s", src)
	case fi.IsDir():
		return true, atf(os.Mkdir(dst, 0o755), "skeleton %s", src)
	case fi.Mode().IsRegular():
		return true, atf(os.WriteFile(dst, nil, 0o644), "skeleton %s", src)
	}
	return false, nil
}

// mount attaches the host directories' overlays and binds the host's /etc
// entries, read-only, once the image root is at base.
func (hb *hostBase) mount() error {
	for _, m := range hb.mounts {
		err := unix.MoveMount(m.fd, "", unix.AT_FDCWD, base+"/"+m.name, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(m.fd)
		if err != nil {
			return atf(err, "attach host /%s", m.name)
		}
	}
	hb.mounts = nil
	for _, name := range hb.etc {
		if err := bindRO("/etc/"+name, base+"/etc/"+name); err != nil {
			return atf(err, "bind host /etc/%s", name)
		}
	}
	return nil
}

// close closes the overlays not attached.
func (hb *hostBase) close() {
	for _, m := range hb.mounts {
		unix.Close(m.fd)
	}
	hb.mounts = nil
}
