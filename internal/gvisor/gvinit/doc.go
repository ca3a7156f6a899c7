// Package gvinit is the part of agentbox that runs inside a gVisor environment:
// the agentbox binary, shown read-only at Path, started by runsc as the
// environment's init (it only reaps) and, through runsc exec, once per command.
//
// A command's helper makes a PID namespace of its own inside gVisor and runs the
// command there as the workspace's owner, without capabilities: every process
// the command starts, daemons that double-fork and call setsid included, lives
// and dies in that namespace, so ending it ends the whole command and nothing
// else. The helper inside the namespace (its init) forwards signals to every
// process in it, reaps them, and writes the main process's wait status and the
// usage of the command's processes to the host as one Report.
//
// It deliberately does nothing else: the sandbox, its mounts and limits are
// runsc's (package gvisor writes its spec), output and timeouts the runner's.
package gvinit

// Path is where the agentbox binary appears inside the sandbox.
const Path = "/.agentbox-gvinit"

// Mode is os.Args[1] of a helper started at Path.
const (
	ModeInit = "init" // the environment's init: reaps, never exits by itself
	ModeExec = "exec" // one command: makes its PID namespace, relays signals
	ModeNS   = "ns"   // the namespace's init: runs the command, forwards, reaps
)

// The descriptors a command's helper is given by runsc exec (--pass-fd).
const (
	FDReport  = 3 // write: one JSON Report, once the main process has exited
	FDControl = 4 // read: signal numbers, one a line; EOF kills the command
)

// Config is a command, os.Args[2] of ModeExec and ModeNS as JSON. Its
// environment and working directory are the helper's own (runsc exec's).
type Config struct {
	UID     uint32   `json:"uid"`
	GID     uint32   `json:"gid"`
	Argv    []string `json:"argv"`
	Rlimits []Rlimit `json:"rlimits,omitempty"`
}

// Rlimit is set on the command (unix.RLIMIT_*).
type Rlimit struct {
	Resource int    `json:"resource"`
	Soft     uint64 `json:"soft"`
	Hard     uint64 `json:"hard"`
}

// Report is how a command ended: its main process's raw wait status and the
// usage of every process of the command reaped by then.
type Report struct {
	Status   uint32 `json:"status"`
	UserNS   int64  `json:"user_ns"`
	SysNS    int64  `json:"sys_ns"`
	MaxRSSKB int64  `json:"maxrss_kb"`
	// StartErr is set when the command could not be started: StartNotFound,
	// StartNotExecutable or the error's text.
	StartErr string `json:"start_err,omitempty"`
}

// Report.StartErr values the host maps to exit codes 127 and 126.
const (
	StartNotFound      = "not found"
	StartNotExecutable = "not executable"
)
