package sandbox

import (
	"sync"

	"golang.org/x/net/bpf"

	"github.com/agentbox/agentbox/internal/landlock"
	"github.com/agentbox/agentbox/internal/seccomp"
)

// filter is the seccomp program every sandbox gets, built once.
var filter = sync.OnceValues(func() ([]bpf.RawInstruction, error) {
	return seccomp.Build(seccomp.DefaultPolicy())
})

// writeFilter is the program for a read-write workspace: no set-ID bits either and,
// where Landlock cannot confine connects to pathname sockets (below ABI 9, the first
// with LANDLOCK_ACCESS_FS_RESOLVE_UNIX, which package landlock grants nowhere), no
// Unix socket that could be aimed at one.
var writeFilter = sync.OnceValues(func() ([]bpf.RawInstruction, error) {
	return seccomp.Build(seccomp.WriteWorkspacePolicy(landlock.ABI() < resolveUnixABI))
})

const resolveUnixABI = 9

// requireMechanisms fails closed, naming the mechanism, when the host lacks one the
// init will need, so the failure comes from Start rather than from a half-built
// sandbox. (Namespaces show up when the init is cloned, cgroups when the sandbox's
// is created.)
func requireMechanisms() error {
	if landlock.ABI() < 1 {
		return &MissingError{Mechanism: "landlock", Err: landlock.ErrUnsupported}
	}
	if _, err := filter(); err != nil {
		return &MissingError{Mechanism: "seccomp", Err: err}
	}
	if _, err := writeFilter(); err != nil {
		return &MissingError{Mechanism: "seccomp", Err: err}
	}
	return nil
}

// devRW are the device nodes of the sandbox's /dev, which stay writable.
var devRW = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// ruleset is the sandbox's Landlock policy, as the init sees the new root: read and
// execute everywhere, write only in /workspace, /tmp, /dev/shm, the device nodes and
// the targets of read-write and copy-on-write mounts; ioctl only on the terminals of
// the sandbox's own devpts instance; signals and abstract unix
// sockets confined to the sandbox. TCP is not Landlock's: the sandbox's network
// namespace has only its own loopback, where test suites start their servers, and
// no route to anything else, the host's loopback included (Landlock could only
// name ports, not addresses).
func ruleset(cfg *Config) landlock.Ruleset {
	rw := []string{"/workspace", "/tmp", "/dev/shm"}
	for _, m := range cfg.Mounts {
		if m.Mode == MountReadWrite || m.Mode == MountCopyOnWrite {
			rw = append(rw, m.Target)
		}
	}
	return landlock.Ruleset{
		ReadExec:          []string{"/"},
		ReadWrite:         rw,
		ReadWriteFiles:    devRW,
		Terminals:         []string{"/dev/pts", "/dev/tty"},
		AllowAllTCP:       true,
		ScopeSignals:      true,
		ScopeAbstractUnix: true,
	}
}
