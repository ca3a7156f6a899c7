package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/landlock"
	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

// namespaces are the namespaces of a sandbox, as Probe names them.
var namespaces = []struct {
	name string
	flag uintptr
}{
	{"user namespace", syscall.CLONE_NEWUSER},
	{"pid namespace", syscall.CLONE_NEWPID},
	{"mount namespace", syscall.CLONE_NEWNS},
	{"network namespace", syscall.CLONE_NEWNET},
	{"ipc namespace", syscall.CLONE_NEWIPC},
	{"uts namespace", syscall.CLONE_NEWUTS},
	{"cgroup namespace", syscall.CLONE_NEWCGROUP},
	{"time namespace", syscall.CLONE_NEWTIME},
}

// Probe reports what this host supports, trying each mechanism for real: it clones
// the agentbox binary into each namespace (inside a new user namespace, as Start
// does), mounts an overlay in a user namespace, and (as root) makes an idmapped
// mount. It is what `agentbox doctor` prints. It takes a few tens of milliseconds.
func Probe() Report {
	var r Report
	add := func(name string, required bool, err error, detail string) {
		c := Check{Name: name, Required: required, OK: err == nil, Detail: detail}
		if err != nil {
			c.Detail = err.Error()
		}
		r.Checks = append(r.Checks, c)
	}
	for _, ns := range namespaces {
		add(ns.name, true, tryClone(ns.flag|syscall.CLONE_NEWUSER, nsinit.Argv0Hold), "")
	}
	add("overlayfs in a user namespace", true, tryClone(syscall.CLONE_NEWUSER|syscall.CLONE_NEWNS, nsinit.Argv0ProbeOverlay), "")
	if os.Geteuid() == 0 {
		add("idmapped mounts", true, tryIdmap(), "")
	}

	r.LandlockABI = landlock.ABI()
	var llErr error
	if r.LandlockABI < 1 {
		llErr = landlock.ErrUnsupported
	}
	add("landlock", true, llErr, fmt.Sprintf("ABI %d", r.LandlockABI))
	_, sErr := filter()
	add("seccomp", true, sErr, "x86_64 filter")

	info := cgroup.Detect()
	r.CgroupVersion = info.Version
	var cgErr error
	if !info.CanCreate {
		cgErr = fmt.Errorf("cgroup %s: %s", info.Mode, info.Reason)
	}
	var usable []string
	for _, c := range info.Controllers {
		if c.Usable {
			usable = append(usable, c.Name)
		}
	}
	add("cgroups", true, cgErr, fmt.Sprintf("%s (v%d): %s", info.Mode, info.Version, strings.Join(usable, " ")))

	if p, err := exec.LookPath("runsc"); err == nil {
		r.Runsc = p
	}
	var rsErr error
	if r.Runsc == "" {
		rsErr = fmt.Errorf("runsc not on PATH")
	}
	add("gVisor runsc", false, rsErr, r.Runsc)
	return r
}

// tryClone starts the agentbox binary as argv0 with the given clone flags (mapping
// uid and gid 0 inside to an unprivileged host id) and waits for it; Argv0Hold is
// killed once it runs, other helpers must exit 0.
func tryClone(flags uintptr, argv0 string) error {
	uid, gid := os.Geteuid(), os.Getegid()
	root := uid == 0
	if root {
		uid, gid = hostIDMax, hostIDMax // probing only: nothing runs as it
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{argv0}
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
		// Root of the new namespace, so the helper keeps its capabilities
		// across execve.
		Credential:                 &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: !root},
		GidMappingsEnableSetgroups: root,
	}
	if root {
		cmd.SysProcAttr.Credential.Groups = []uint32{}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		return err
	}
	if argv0 == nsinit.Argv0Hold {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w", argv0, err)
	}
	return nil
}

// tryIdmap makes an idmapped detached mount of a fresh directory, as Start does for
// a workspace.
func tryIdmap() error {
	dir, err := os.MkdirTemp("", "agentbox-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	ns, err := idmapUserns(dir, &identity{uid: hostIDMax, gid: hostIDMax})
	if err != nil {
		return err
	}
	defer ns.Close()
	tree, err := detachedTree(dir, ns)
	if err != nil {
		return err
	}
	return tree.Close()
}
