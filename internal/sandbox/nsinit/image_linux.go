package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// mountImage mounts the overlay of img's layers and private upper layer at base,
// in place of the root tmpfs (and, over the host's system directories, the
// overlays of those: see prepareHost). The layers and the state directory are
// staged on that tmpfs just long enough to name them: the overlay keeps
// references of its own, so both and the tmpfs are detached before the overlay
// is attached. "lowerdir+" takes one layer per call (no option-string limit;
// Linux 6.8), "userxattr" keeps whiteouts and opaque marks in the
// user.overlay.* form layers use (trusted.* needs the host's CAP_SYS_ADMIN),
// and "volatile" skips every sync of an upper layer that lives as long as the
// sandbox.
func mountImage(img *Image) error {
	layers, state := stage+"/layers", stage+"/imagestate"
	for _, d := range []string{layers, state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return at("mkdir stage", err)
		}
	}
	if len(img.Lowers) > 0 || !img.Layers.IsZero() {
		if err := attach(img.Layers, layers); err != nil {
			return at("attach image layers", err)
		}
	}
	if err := attach(img.State, state); err != nil {
		return at("attach image upper layer", err)
	}
	if len(img.Lowers) == 0 && !img.Host {
		return at("image", fmt.Errorf("no layers: %w", unix.EINVAL))
	}
	lowers := make([]string, 0, len(img.Sealed)+len(img.Lowers)+1)
	for i, l := range img.Sealed {
		d := fmt.Sprintf("%s/sealed%d", stage, i)
		if err := os.MkdirAll(d, 0o700); err != nil {
			return at("mkdir stage", err)
		}
		if err := attach(l, d); err != nil {
			return atf(err, "attach sealed root layer %d", i)
		}
		lowers = append(lowers, d)
	}
	for _, l := range img.Lowers {
		if !local(l) {
			return atf(unix.EINVAL, "image lowerdir+ %q: not a relative path inside its tree", l)
		}
		lowers = append(lowers, layers+"/"+l)
	}
	var hb *hostBase
	if img.Host {
		var err error
		if hb, err = prepareHost(img, lowers, state); err != nil {
			return err
		}
		defer hb.close()
		lowers = append(lowers, hb.skel)
	}
	for _, p := range []string{img.Upper, img.Work} {
		if !local(p) {
			return atf(unix.EINVAL, "image upper or work %q: not a relative path inside its tree", p)
		}
	}
	mnt, err := makeOverlay(lowers, state+"/"+img.Upper, state+"/"+img.Work, "image")
	if err != nil {
		return err
	}
	defer unix.Close(mnt)
	if err := unix.Unmount(base, unix.MNT_DETACH); err != nil {
		return atf(err, "detach %s", base)
	}
	if err := unix.MoveMount(mnt, "", unix.AT_FDCWD, base, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return at("attach image overlay", err)
	}
	if hb != nil {
		return hb.mount()
	}
	return nil
}

// makeOverlay creates (does not attach) an overlay of lowers (top first) with
// upper and work, and returns its mount.
func makeOverlay(lowers []string, upper, work, what string) (int, error) {
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, at("fsopen overlay", err)
	}
	defer unix.Close(fs)
	for _, l := range lowers {
		if err := unix.FsconfigSetString(fs, "lowerdir+", l); err != nil {
			return -1, atf(err, "%s lowerdir+ %s", what, l)
		}
	}
	if err := unix.FsconfigSetString(fs, "upperdir", upper); err != nil {
		return -1, atf(err, "%s upperdir", what)
	}
	if err := unix.FsconfigSetString(fs, "workdir", work); err != nil {
		return -1, atf(err, "%s workdir", what)
	}
	for _, flag := range []string{"userxattr", "volatile"} {
		if err := unix.FsconfigSetFlag(fs, flag); err != nil {
			return -1, atf(err, "%s overlay option %s", what, flag)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, atf(err, "create %s overlay", what)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, atf(err, "fsmount %s overlay", what)
	}
	return mnt, nil
}

// local reports whether p is a clean relative path that stays inside its
// directory.
func local(p string) bool {
	return p != "" && !path.IsAbs(p) && path.Clean(p) == p && filepath.IsLocal(p)
}

// ensureDir makes name (an absolute path in the new root) a directory reached
// through directories only: a symlink, file or device of the image on the way is
// replaced (in the upper layer), so nothing the init mounts lands where an
// image's link points (resolved now, that would be a host path).
func ensureDir(name string) error {
	cur := base
	for _, c := range strings.Split(strings.Trim(name, "/"), "/") {
		if c == "" {
			continue
		}
		cur += "/" + c
		fi, err := os.Lstat(cur)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			if err := os.Remove(cur); err != nil {
				return atf(err, "replace %s", strings.TrimPrefix(cur, base))
			}
		case !errors.Is(err, os.ErrNotExist):
			return atf(err, "stat %s", strings.TrimPrefix(cur, base))
		}
		if err := os.Mkdir(cur, 0o755); err != nil {
			return atf(err, "mkdir %s", strings.TrimPrefix(cur, base))
		}
	}
	return nil
}

// ensureFile makes name a regular file (empty if it was not one), in a directory
// made by ensureDir, to bind a file over.
func ensureFile(name string) error {
	if err := ensureDir(path.Dir(name)); err != nil {
		return err
	}
	p := base + name
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.Mode().IsRegular():
		return nil
	case err == nil:
		if err := os.RemoveAll(p); err != nil {
			return atf(err, "replace %s", name)
		}
	case !errors.Is(err, os.ErrNotExist):
		return atf(err, "stat %s", name)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return atf(err, "create %s", name)
	}
	return f.Close()
}

// ownDirs are the top-level directories of the root the init mounts itself.
var ownDirs = map[string]bool{"dev": true, "proc": true, "sys": true, "tmp": true, "workspace": true, ".stage": true}

// imageDirs lists the top-level directories of the mounted image that the
// commands may write (into the upper layer): every real directory but the
// sandbox's own. Symlinks (/bin -> usr/bin) are reached through their targets.
func imageDirs() ([]string, error) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil, at("read image root", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !ownDirs[e.Name()] {
			out = append(out, "/"+e.Name())
		}
	}
	return out, nil
}

// rootFiles places the init's generated files (/etc's, the trust bundle) in the
// new root. On the root tmpfs they are written in place (pivot makes the root
// read-only); over an image they are written to a tmpfs of their own and bound
// read-only over the image's files, so they never reach its upper layer (a build
// step's layer would record them).
type rootFiles struct {
	image bool
	n     int
	// etc is where the image's /etc is (imageEtc); "" is /etc.
	etc string
}

// path is name (absolute) in the new root with /etc where the image has it.
func (r *rootFiles) path(name string) string {
	if rest, ok := strings.CutPrefix(name, "/etc/"); ok && r.etc != "" {
		return r.etc + "/" + rest
	}
	return name
}

// imageEtc returns where the image's /etc is in the new root: "/etc", or,
// where the image's /etc is a symbolic link to a directory, that directory, as
// the link resolves in the new root (openat2 RESOLVE_IN_ROOT: an absolute
// target from the image's root, ".." stopping there; never on the host, never
// onto another mount). A link that resolves to no directory there is replaced
// by one, as every mount point on the way is (ensureDir).
func imageEtc() (string, error) {
	fi, err := os.Lstat(base + "/etc")
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return "/etc", ensureDir("/etc")
	}
	root, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", at("open image root", err)
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, "etc", &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV})
	if err != nil {
		return "/etc", ensureDir("/etc")
	}
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	unix.Close(fd)
	rel, ok := strings.CutPrefix(real, base+"/")
	if err != nil || !ok || !local(rel) {
		return "/etc", ensureDir("/etc")
	}
	return "/" + rel, ensureDir("/" + rel)
}

// genDir holds rootFiles' sources over an image; unstage detaches it.
const genDir = stage + "/gen"

func (r *rootFiles) put(name string, content []byte) error {
	name = r.path(name)
	if !r.image {
		if err := os.MkdirAll(path.Dir(base+name), 0o755); err != nil {
			return atf(err, "mkdir %s", path.Dir(name))
		}
		return atf(os.WriteFile(base+name, content, 0o644), "write %s", name)
	}
	if r.n == 0 {
		if err := os.MkdirAll(genDir, 0o700); err != nil {
			return at("mkdir stage", err)
		}
		if err := unix.Mount("tmpfs", genDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m,nr_inodes=64"); err != nil {
			return at("mount generated files tmpfs", err)
		}
	}
	r.n++
	src := fmt.Sprintf("%s/%d", genDir, r.n)
	if err := os.WriteFile(src, content, 0o644); err != nil {
		return atf(err, "write %s", name)
	}
	if err := ensureFile(name); err != nil {
		return err
	}
	return atf(bindRO(src, base+name), "bind %s", name)
}
