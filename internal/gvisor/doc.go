// Package gvisor runs one command in a gVisor sandbox (runsc, systrap platform):
// the command's system calls are served by gVisor's user-space kernel, the Sentry,
// instead of the host kernel, which sees only the Sentry's narrow set of calls.
//
// The sandbox is built from an OCI bundle this package writes: an empty read-only
// root with the host's system directories bound read-only, a generated /etc, a
// /tmp tmpfs, the workspace as a copy-on-write overlay of the host directory, no
// network but loopback (runsc --network=none), rlimits, and the command as the
// workspace's owner with no capabilities and no_new_privs.
//
// Its host side is one mount namespace and one cgroup of its own. runsc is started
// from a locked OS thread that has unshared its mount namespace and mounted the
// overlay there, so the mount is visible to runsc and its gofer only and vanishes
// with them; the thread joins the run's cgroup just for the fork, so runsc, the
// Sentry and the gofer are born inside it. The cgroup bounds memory (an OOM kills
// the Sentry, and with it everything inside), accounts CPU and memory, and is how
// the whole sandbox is killed: nothing of a gVisor sandbox exists outside those
// host processes.
//
// StartEnv runs a persistent sandbox of the same build, an environment: its init
// and a helper per command are package gvinit's, each command a runsc exec.
//
// It deliberately does not capture output, enforce timeouts or decide exit codes
// (package runner does), or offer a network through the egress proxy.
package gvisor
