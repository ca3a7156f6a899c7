package sandbox

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// Host ids handed to sandboxes when agentbox runs as root: far above any real user or
// subordinate-id range. Each sandbox gets a pair of its own, reserved in reserveDirs
// under the even id: that one for the sandbox user, the next for its init.
const (
	hostIDMin = 1 << 20
	hostIDMax = 1 << 30
)

// reserveDirs hold one entry per host id in use. The first that exists (or can be
// made) and is a root-owned 0700 directory is used; /tmp is the fallback, where the
// ownership check defeats a directory planted by another user.
var reserveDirs = []string{"/run/agentbox/ids", filepath.Join(os.TempDir(), "agentbox-ids")}

// identity is who the sandbox user (uid/gid 1000 inside) and the init are on the
// host.
type identity struct {
	uid, gid int
	// initUID and initGID are the init's host ids: uid and gid + 1 as root (the
	// init is uid 0 of the sandbox's user namespace), uid and gid otherwise.
	initUID, initGID int
	// root: agentbox runs as root and uid was picked for this sandbox.
	root bool
	// build: a build sandbox's (see buildIdentity); its namespace maps a range.
	build   bool
	reserve string   // reservation to remove at the end (root only)
	lock    *os.File // holds the reservation's flock while the sandbox lives
}

// cgroupRecord is the file in a reservation that names the sandbox's cgroup, so
// that ReapStale can remove the cgroup of a sandbox whose agentbox died.
const cgroupRecord = "cgroup"

// newIdentity picks the host ids. As root: a fresh random pair reserved for this
// sandbox, so no two sandboxes share a host uid, none is host root, and the init
// has credentials of its own, which the kernel protects from the commands.
// Otherwise: the caller's own ids for both (an unprivileged user can map nothing
// else).
func newIdentity() (*identity, error) {
	if os.Geteuid() != 0 {
		uid, gid := os.Geteuid(), os.Getegid()
		return &identity{uid: uid, gid: gid, initUID: uid, initGID: gid}, nil
	}
	dir, err := reserveDir()
	if err != nil {
		return nil, err
	}
	// Liveness is a flock on the reservation, as for state directories (see
	// ReapStale); the shared lock on dir keeps ReapStale from seeing a
	// reservation between its creation and its lock.
	dl, err := lockDir(dir, unix.LOCK_SH)
	if err != nil {
		return nil, fmt.Errorf("reserve host id: %w", err)
	}
	defer dl.Close()
	for range 64 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		id := (hostIDMin + int(binary.LittleEndian.Uint32(b[:])%(hostIDMax-hostIDMin))) &^ 1
		p := filepath.Join(dir, strconv.Itoa(id))
		if _, err := os.Lstat(filepath.Join(dir, strconv.Itoa(id+1))); err == nil {
			continue // a single-id reservation of an older agentbox
		}
		ident := &identity{uid: id, gid: id, initUID: id + 1, initGID: id + 1, root: true}
		err := ident.take(p)
		if err == nil {
			return ident, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
	}
	return nil, errors.New("reserve host id: no free id after 64 tries")
}

// take makes the reservation p (a new directory of a reservation directory
// the caller holds shared) the identity's and locks it. os.ErrExist if p is
// taken.
func (id *identity) take(p string) error {
	err := os.Mkdir(p, 0o700)
	if errors.Is(err, os.ErrExist) {
		return err
	}
	if err != nil {
		return fmt.Errorf("reserve host id: %w", err)
	}
	if id.lock, err = lockDir(p, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = os.Remove(p)
		return fmt.Errorf("reserve host id: %w", err)
	}
	id.reserve = p
	return nil
}

// buildReservePrefix names a build sandbox's reservation: build sandboxes
// share the foreign id range, so theirs is named by a random tag, not an id.
const buildReservePrefix = "build-"

// buildIdentity is every build sandbox's: its namespace maps 0..IDCount-1 to
// the image ids IDBase.., the init and the command are both root of it. The
// foreign range is nobody's on the host, so there is no id to reserve; the
// reservation (build-<tag>) exists so that ReapStale finds the cgroup of a
// build sandbox whose agentbox died.
func buildIdentity() (*identity, error) {
	id := &identity{uid: image.IDBase, gid: image.IDBase, initUID: image.IDBase, initGID: image.IDBase, root: true, build: true}
	dir, err := reserveDir()
	if err != nil {
		return nil, err
	}
	dl, err := lockDir(dir, unix.LOCK_SH)
	if err != nil {
		return nil, fmt.Errorf("reserve host id: %w", err)
	}
	defer dl.Close()
	for range 8 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		err := id.take(filepath.Join(dir, fmt.Sprintf("%s%x", buildReservePrefix, b)))
		if !errors.Is(err, os.ErrExist) {
			return id, err
		}
	}
	return nil, errors.New("reserve host id: no free build reservation after 8 tries")
}

// reserveDir returns the first usable reservation directory.
func reserveDir() (string, error) {
	var errs []error
	for _, d := range reserveDirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			errs = append(errs, err)
			continue
		}
		fi, err := os.Lstat(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !fi.IsDir() || !ok || st.Uid != 0 || fi.Mode().Perm()&0o077 != 0 {
			errs = append(errs, fmt.Errorf("%s: not a private root-owned directory", d))
			continue
		}
		return d, nil
	}
	return "", fmt.Errorf("reserve host id: %w", errors.Join(errs...))
}

// record notes the sandbox's cgroup in the reservation (root only).
func (id *identity) record(cgroupName string) error {
	if id.reserve == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(id.reserve, cgroupRecord), []byte(cgroupName), 0o600); err != nil {
		return fmt.Errorf("reserve host id: %w", err)
	}
	return nil
}

// release frees the reservation: removed first, unlocked after.
func (id *identity) release() {
	if id.reserve != "" {
		if dl, err := lockDir(filepath.Dir(id.reserve), unix.LOCK_SH); err == nil {
			_ = os.RemoveAll(id.reserve)
			dl.Close()
		}
		id.reserve = ""
	}
	id.unlock()
}

// unlock lets go of the reservation's lock and leaves the reservation: a kept
// sandbox's, for a Start From its Leftover.
func (id *identity) unlock() {
	if id.lock != nil {
		id.lock.Close()
		id.lock = nil
	}
}

// lockDir opens dir (never through a symlink) and flocks it.
func lockDir(dir string, how int) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if err := flock(f, how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// reapIDs removes the host id reservations no live sandbox holds, and the
// cgroup each names: those of an agentbox process that died without Destroy.
// Its init died with it (parent-death signal), and the pid namespace with the
// init, so the cgroup is empty or about to be; cgroup.Reap kills whatever is
// left anyway before removing it.
func reapIDs() error {
	var errs []error
	for _, dir := range reserveDirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		if err := reapIDsIn(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func reapIDsIn(dir string) error {
	dl, err := lockDir(dir, unix.LOCK_EX)
	if err != nil {
		return fmt.Errorf("reap host ids: %w", err)
	}
	defer dl.Close()
	names, err := dl.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("reap host ids: %w", err)
	}
	var errs []error
	for _, name := range names {
		if _, err := strconv.Atoi(name); err != nil && !isBuildReservation(name) {
			continue
		}
		p := filepath.Join(dir, name)
		l, err := lockDir(p, unix.LOCK_EX|unix.LOCK_NB)
		if errors.Is(err, unix.EWOULDBLOCK) {
			continue // its sandbox is alive
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reap host id %s: %w", name, err))
			continue
		}
		if kept(p) {
			l.Close() // for a Start From it, or Discard, while its record exists
			continue
		}
		if b, err := os.ReadFile(filepath.Join(p, cgroupRecord)); err == nil {
			if cg := string(b); strings.HasPrefix(cg, CgroupPrefix) && len(cg) == len(CgroupPrefix)+16 {
				if _, err := cgroup.Reap("", cg); err != nil && !errors.Is(err, cgroup.ErrUnsupported) {
					errs = append(errs, fmt.Errorf("reap host id %s: %w", name, err))
					l.Close()
					continue
				}
			}
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("reap host id %s: %w", name, err))
		}
		l.Close()
	}
	return errors.Join(errs...)
}

// isBuildReservation reports whether name is a build sandbox's reservation.
func isBuildReservation(name string) bool {
	tag, ok := strings.CutPrefix(name, buildReservePrefix)
	if !ok || len(tag) != 16 {
		return false
	}
	for _, c := range tag {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// sysProcAttr returns the clone settings of the init: fresh namespaces, death with
// its parent, a session of its own, and its identity. As root: the mapping
// 0 -> initUID, 1000 -> uid, the init as uid 0 (which holds every capability of the
// new user namespace after its execve, and starts each command as 1000) and no
// supplementary groups, so host group 0 does not follow it in (clearing them needs
// setgroups, which root may allow). Otherwise the single-id mapping 1000 -> uid,
// setgroups denied as the kernel requires, and the setup capabilities raised as
// ambient so that they survive the init's execve as uid 1000.
func (id *identity) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: nsinit.UID, HostID: id.uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: nsinit.GID, HostID: id.gid, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
		Setsid:      true,
	}
	if id.build {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: id.uid, Size: image.IDCount}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: id.gid, Size: image.IDCount}}
		attr.GidMappingsEnableSetgroups = true
		attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
		return attr
	}
	if !id.root {
		attr.Credential = &syscall.Credential{Uid: nsinit.UID, Gid: nsinit.GID, NoSetGroups: true}
		attr.AmbientCaps = nsinit.InitCaps()
		return attr
	}
	attr.UidMappings = append([]syscall.SysProcIDMap{{ContainerID: 0, HostID: id.initUID, Size: 1}}, attr.UidMappings...)
	attr.GidMappings = append([]syscall.SysProcIDMap{{ContainerID: 0, HostID: id.initGID, Size: 1}}, attr.GidMappings...)
	attr.GidMappingsEnableSetgroups = true
	attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	return attr
}

// giveStdio hands the pipes among the command's stdio that agentbox made (owned by
// root) to the sandbox's host uid. Such a pipe has mode 0600: the command can use the
// descriptor it inherits, but reopening it through /dev/stdout (/proc/self/fd/1), as
// many scripts do, fails with EACCES. runc does the same for a container's stdio.
// Terminals and other users' pipes are left alone.
func (id *identity) giveStdio(stdio Stdio) error {
	if !id.root {
		return nil
	}
	for _, f := range []*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr} {
		if f == nil {
			continue
		}
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("stdio: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if fi.Mode()&os.ModeNamedPipe == 0 || !ok || st.Uid != 0 {
			continue
		}
		if err := f.Chown(id.uid, id.gid); err != nil {
			return fmt.Errorf("stdio: %w", err)
		}
	}
	return nil
}
