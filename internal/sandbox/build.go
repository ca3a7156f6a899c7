package sandbox

import (
	"crypto/x509"
	"io"
	"net/netip"
)

// BuildRunner runs the build steps of package image that run commands (apt,
// npm, go_modules, run) in build sandboxes: it is the production image.Runner.
//
// A build sandbox is a sandbox whose root is the step's parent layers, read-only,
// below the upper directory Build gave (overlayfs with "userxattr", so whiteouts
// and opaque marks land in upper as layers hold them), whose user namespace maps
// 0..65535 to image.IDBase.. (what the step writes is owned as layer files are),
// and whose command runs as root of that namespace with nsinit.BuildCaps and the
// image's own users and groups. Everything else is a sandbox's: fresh pid, mount,
// network, IPC and UTS namespaces, a cgroup, no_new_privs, Landlock and seccomp.
// Its network is the egress proxy with the allowlist of the step's preset
// (image.Step.Egress; none for a run step). Two build sandboxes share host ids
// (the foreign range), so each relies on its namespaces to keep the other out.
// RunStep returns once the sandbox is destroyed: nothing runs or writes to upper
// any more.
type BuildRunner struct {
	// Memory, Pids and CPUs are each step's cgroup limits, as in Config (zero:
	// the defaults).
	Memory int64
	Pids   int64
	CPUs   float64
	// TmpSize is the size of the step's /tmp (zero: DefaultTmpSize).
	TmpSize int64
	// Output receives the step's standard output and error; nil discards them
	// (the last lines still go into a failed step's error).
	Output io.Writer
	// UpstreamRoots verify the registries' certificates behind the egress proxy;
	// nil: the system roots.
	UpstreamRoots *x509.CertPool
	// AllowPrivate opens these special-purpose address ranges to the preset's
	// names (egress.Policy.AllowPrivate): a mirror of the registry on the LAN.
	AllowPrivate []netip.Prefix
}

// buildRoot is a build sandbox's root file system (see BuildRunner).
type buildRoot struct {
	layers      []string // host directories, bottom first
	host        bool     // over the host's system directories (image.Root.Host)
	upper, work string   // empty, in one directory
}
