// Package nsinit is the init of a namespace sandbox: cmd/agentbox-init, or the agentbox
// binary re-executed, started by package sandbox as "agentbox-init" inside fresh user, pid, mount, network, IPC and
// UTS namespaces. It reads its whole configuration (a Spec) from one pipe, makes a
// time namespace for the commands, builds a fresh read-only root on a tmpfs (host
// /usr, /bin, /lib… bound read-only, a generated /etc, a fresh /proc with the host's
// details masked, a minimal /dev, a size-limited /tmp and the /workspace overlay),
// pivots into it, brings up loopback (for a sandbox with egress, also opens the
// proxy's listener there and hands it to the host, and adds the sandbox's CA to the
// trust store: Network), drops its capabilities (see dropCaps), sets no_new_privs, installs Landlock and then seccomp, starts the
// command as the sandbox user (uid 1000; as root the init itself is uid 0 of the
// user namespace, out of the command's reach) and stays pid 1 to reap everything,
// reporting setup failures (with the stage that failed) and the command's exit
// status on a second pipe.
//
// A persistent init (Spec.Persistent) starts no command of its own: after the same
// setup it sends the host a descriptor of its /workspace and serves Requests on a
// socket (serve.go): it starts commands in sessions of their own, attributes every
// process of the sandbox to the command it came from, reports each command's exit
// and usage, and signals or kills one command's processes on request.
//
// It does nothing else: it chooses no policy (the Spec says what to mount and carries
// the Landlock ruleset and the seccomp program the host built), never talks to the
// host except through its two pipes (and the socket, when persistent; the egress
// socket, once, to send the listener), forwards no traffic, and creates no cgroup
// (the host places it in one before it sends the Spec). Besides the init, MaybeRun
// hosts two tiny helpers of sandbox.Probe that need a process in fresh namespaces: a
// holder and the overlay probe. MaybeRun runs from this package's init function, so
// the init pays for no package initialisation of the binary beyond its own
// dependencies.
package nsinit
