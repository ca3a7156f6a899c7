// Package sandbox is the host side of agentbox's namespace isolation. Start starts the
// init of package nsinit (agentbox-init beside the executable if it is to be trusted,
// see initBinary; otherwise the agentbox binary re-executed) in fresh user, pid, mount, network,
// IPC and UTS namespaces, maps the sandbox user (uid/gid 1000 inside) to one
// unprivileged host id (never host root) and, as root, the init (uid 0 inside) to the
// next one, so that no command can steer it; places the init in a cgroup of its own
// before it does anything, and hands it its whole configuration as one serialised
// struct over a pipe. Wait collects the command's exit status, usage and any setup failure (with
// the stage that failed) from a second pipe; Terminate, Kill and Destroy end the
// sandbox, the last one confirming through the cgroup that nothing survived.
//
// A persistent sandbox (Config.Persistent, for package env) runs no command of its
// own: once its init is set up and confined, Exec starts commands in it, each a
// Process that can be waited for, signalled and killed on its own, and
// WorkspaceDir is the init's descriptor of its /workspace for host-side file
// access. Frozen runs a function with the whole sandbox frozen; Pause freezes it
// until Resume (its processes use no CPU meanwhile, and continue where they stopped).
//
// A sandbox on an image (Config.Image) has the image's layers, read-only and shared,
// below a private upper layer as its root instead of the host's system directories
// (an image built on the host has them below its layers, read-only and idmapped);
// BuildRunner runs image build steps in build sandboxes, whose user namespace maps
// the image's ids and whose network is the step's egress preset.
//
// Its one mount is on the host: as root, the private upper layer of an overlay
// workspace lives on a size-limited tmpfs (Config.WorkspaceSize) in a fixed state
// directory, unmounted by Destroy or, after a crash, by ReapStale. Everything inside
// the sandbox is mounted by the init; packages landlock and seccomp define what is
// allowed (this package only picks the write-mode variant of the filter), package
// cgroup does the limits.
// It does not capture output, enforce timeouts or decide exit codes: package runner
// does. A cgroup is not optional: without one the sandbox could not be killed as a
// whole, so Start fails closed, naming the missing controller.
package sandbox
