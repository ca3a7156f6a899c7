package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/cgroup"
)

// keepMarker, in a state directory and in a host id reservation, says that the
// sandbox was started with Config.Keep, whose path it holds: ReapStale leaves
// both once the sandbox is dead, as long as that path exists.
const keepMarker = "keep"

// Leftover returns what the sandbox leaves on the host if agentbox dies without
// Destroy: a kept overlay sandbox's state directory and host uid. The zero
// Leftover for a sandbox that keeps nothing.
func (s *Sandbox) Leftover() Leftover {
	if s.cfg.Keep == "" || s.state == "" {
		return Leftover{}
	}
	return Leftover{State: s.state, UID: s.id.uid, Init: s.cmd.Process.Pid, InitStart: s.initStart}
}

// procStart returns pid's start time (field 22 of /proc/PID/stat) and its real uid.
func procStart(pid int) (start uint64, uid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if i < 0 || len(f) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	if start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return 0, 0, err
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	_, rest, ok := strings.Cut(string(st), "\nUid:\t")
	if !ok {
		return 0, 0, fmt.Errorf("/proc/%d/status: no Uid", pid)
	}
	uid, err = strconv.Atoi(strings.Fields(rest)[0])
	return start, uid, err
}

// killOldInit kills l's init if it still runs: it is a process of that pid and
// start time, opened as a pidfd first (a pid recycled since is not it), whose
// real uid is the init's host uid. A live process that matches the pid and start
// time but not the uid is another process: the leftover is refused.
func killOldInit(l Leftover, initUID int, refuse func(string, ...any) error) error {
	if l.Init <= 0 {
		return nil
	}
	fd, err := unix.PidfdOpen(l.Init, 0)
	if err != nil {
		return nil // gone (ESRCH)
	}
	defer unix.Close(fd)
	start, uid, err := procStart(l.Init)
	if err != nil || start != l.InitStart {
		return nil // gone, or the pid is another process's now
	}
	if uid != initUID {
		return refuse("its init pid %d is a live process of uid %d, not the init's", l.Init, uid)
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && err != unix.ESRCH {
		return fmt.Errorf("sandbox: kill the leftover's init: %w", err)
	}
	return nil
}

// markKept writes the keep marker for record in dir (root-owned, never through
// a link).
func markKept(dir, record string) error {
	if !filepath.IsAbs(record) {
		return fmt.Errorf("sandbox: Keep %q is not an absolute path", record)
	}
	f, err := os.OpenFile(filepath.Join(dir, keepMarker), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("keep sandbox state: %w", err)
	}
	_, err = f.WriteString(record)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keep sandbox state: %w", err)
	}
	return nil
}

// kept reports whether dir holds a keep marker whose record exists.
func kept(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, keepMarker), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	b := make([]byte, 4097)
	n, _ := f.Read(b)
	record := string(b[:n])
	if n == len(b) || !filepath.IsAbs(record) {
		return false
	}
	_, err = os.Lstat(record)
	return err == nil
}

// takeLeftover makes a dead kept sandbox's host ids and state directory s's, after
// checking that l names exactly that: a directory directly in stateRoot, not a
// link, kept, unlocked (nobody's), owned by the uid, whose reservation is kept and
// unlocked too. Whatever its old cgroup still holds (the init of a paused sandbox,
// which the freezer kept from dying) is killed and the cgroup removed first.
func (s *Sandbox) takeLeftover(l Leftover) (*identity, error) {
	refuse := func(format string, args ...any) error {
		return &LeftoverError{Leftover: l, Reason: fmt.Sprintf(format, args...)}
	}
	base := filepath.Base(l.State)
	if filepath.Clean(l.State) != l.State || filepath.Dir(l.State) != stateRoot || !strings.HasPrefix(base, statePrefix) || len(base) == len(statePrefix) {
		return nil, refuse("not a state directory of %s", stateRoot)
	}
	id, err := takeReservation(l.UID, refuse)
	if err != nil {
		return nil, err
	}
	// Before the cgroup's kill (below) so a paused init is not thawed first: its
	// SIGKILL is pending when the freezer lets it go.
	if err := killOldInit(l, id.initUID, refuse); err != nil {
		id.lock.Close()
		return nil, err
	}
	if err := id.reapOldCgroup(); err != nil {
		id.lock.Close()
		return nil, err
	}
	root, err := openStateRoot(unix.LOCK_SH)
	if err != nil {
		id.release()
		return nil, err
	}
	defer root.Close()
	s.state = l.State
	fail := func(err error) (*identity, error) {
		for _, f := range s.stateLocks {
			f.Close()
		}
		s.state, s.stateLocks = "", nil
		id.lock.Close() // not release: a refused leftover is not ours to remove
		return nil, err
	}
	if err := s.lockState(); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fail(refuse("its sandbox is alive"))
		}
		return fail(refuse("%v", err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(s.stateLocks[0].Fd()), &st); err != nil {
		return fail(err)
	}
	if int(st.Uid) != l.UID {
		return fail(refuse("the state directory belongs to uid %d", st.Uid))
	}
	if !kept(l.State) {
		return fail(refuse("the state directory is not kept, or its record is gone"))
	}
	var rst unix.Stat_t
	if err := unix.Fstat(int(root.Fd()), &rst); err != nil {
		return fail(err)
	}
	s.stateMounted = st.Dev != rst.Dev
	// A volatile overlay (see nsinit's mountOverlay) leaves work/work/incompat/volatile,
	// and the kernel mounts its upper layer again only once that is gone: it warns
	// that the upper layer may have missed a sync, which a crash of the machine
	// would lose, not one of agentbox.
	for _, w := range []string{"work", rootWork} {
		if err := removeBelow(l.State, filepath.Join(w, "work", "incompat")); err != nil {
			return fail(fmt.Errorf("sandbox: leftover: %w", err))
		}
	}
	return id, nil
}

// removeBelow removes dir/rel, every directory on the way there a real one (no
// link is followed). Nothing there is not an error.
func removeBelow(dir, rel string) error {
	p := dir
	for _, part := range strings.Split(filepath.Dir(rel), "/") {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", p)
		}
	}
	return os.RemoveAll(filepath.Join(dir, rel))
}

// takeReservation takes the kept reservation of a dead sandbox's uid (as root;
// otherwise uid must be the caller's own).
func takeReservation(uid int, refuse func(string, ...any) error) (*identity, error) {
	if os.Geteuid() != 0 {
		if uid != os.Geteuid() {
			return nil, refuse("not this user's uid")
		}
		return &identity{uid: uid, gid: os.Getegid(), initUID: uid, initGID: os.Getegid()}, nil
	}
	if uid < hostIDMin || uid >= hostIDMax || uid%2 != 0 {
		return nil, refuse("not a sandbox host uid")
	}
	dir, err := reserveDir()
	if err != nil {
		return nil, err
	}
	dl, err := lockDir(dir, unix.LOCK_SH)
	if err != nil {
		return nil, fmt.Errorf("reserve host id: %w", err)
	}
	defer dl.Close()
	p := filepath.Join(dir, strconv.Itoa(uid))
	lock, err := lockDir(p, unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case errors.Is(err, unix.EWOULDBLOCK):
		return nil, refuse("its sandbox is alive")
	case err != nil:
		return nil, refuse("no reservation: %v", err)
	case !kept(p):
		lock.Close()
		return nil, refuse("its reservation is not kept, or its record is gone")
	}
	return &identity{uid: uid, gid: uid, initUID: uid + 1, initGID: uid + 1, root: true, reserve: p, lock: lock}, nil
}

// reapOldCgroup kills and removes the cgroup the reservation names (root only).
func (id *identity) reapOldCgroup() error {
	if id.reserve == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(id.reserve, cgroupRecord))
	if err != nil {
		return nil
	}
	if cg := string(b); strings.HasPrefix(cg, CgroupPrefix) && len(cg) == len(CgroupPrefix)+16 {
		if _, err := cgroup.Reap("", cg); err != nil && !errors.Is(err, cgroup.ErrUnsupported) {
			return fmt.Errorf("sandbox: remove the leftover's cgroup: %w", err)
		}
	}
	return nil
}

// Discard removes a kept sandbox's Leftover that nobody will start From: its
// state directory with its upper layers and mounts, its reservation and its
// cgroup. A Leftover that names no dead kept sandbox is refused
// (*LeftoverError) and nothing is touched.
func Discard(l Leftover) error {
	s := &Sandbox{cfg: Config{From: &l}}
	id, err := s.takeLeftover(l)
	if err != nil {
		return err
	}
	s.id = id
	err = s.removeState()
	id.release()
	return err
}

// mountedOn reports whether a file system is mounted on dir, whose parent is on
// another device then.
func mountedOn(dir string) bool {
	var a, b unix.Stat_t
	if unix.Lstat(dir, &a) != nil || unix.Lstat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}
