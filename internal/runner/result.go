package runner

import (
	"syscall"

	"github.com/agentbox/agentbox/internal/egress"

	"golang.org/x/sys/unix"
)

// Result is how one run ended. Its JSON form is the `agentbox run --json` contract.
type Result struct {
	ExitCode        int       `json:"exit_code"`
	Signal          *string   `json:"signal"`
	TimedOut        bool      `json:"timed_out"`
	Cancelled       bool      `json:"cancelled"`
	OOMKilled       bool      `json:"oom_killed"`
	Limit           Limit     `json:"limit"`
	Stdout          string    `json:"stdout"`
	Stderr          string    `json:"stderr"`
	StdoutTruncated bool      `json:"stdout_truncated"`
	StderrTruncated bool      `json:"stderr_truncated"`
	StdoutBytes     int64     `json:"stdout_bytes"`
	StderrBytes     int64     `json:"stderr_bytes"`
	DurationMS      int64     `json:"duration_ms"`
	CPUUserMS       int64     `json:"cpu_user_ms"`
	CPUSysMS        int64     `json:"cpu_sys_ms"`
	MemoryPeakBytes int64     `json:"memory_peak_bytes"`
	Survivors       int       `json:"survivors"`
	Isolation       Isolation `json:"isolation"`
	// LandlockABI is the Landlock ABI enforced (namespace level; 0 otherwise).
	LandlockABI int `json:"landlock_abi,omitempty"`
	// Error says why the command could not be started (exit codes 125-127).
	Error string `json:"error,omitempty"`
	// StdoutRef and StderrRef name the whole stream as an artifact
	// ("sha256:<hex>") when the captured text was truncated. Package env sets
	// them for commands in environments; Run never does.
	StdoutRef string `json:"stdout_ref,omitempty"`
	StderrRef string `json:"stderr_ref,omitempty"`
	// Network is every connection the command made through its egress proxy, in
	// the order they ended (Spec.Sandbox.Network; absent without one). A gap in
	// the events' seq says the proxy's log dropped the oldest.
	Network []egress.Event `json:"network,omitzero"`
}

// Exit statuses for failures that are not the command's own (coreutils conventions).
const (
	StatusTimeout       = 124
	StatusInternal      = 125
	StatusNotExecutable = 126
	StatusNotFound      = 127
)

// ExitStatus is the status `agentbox run` exits with: the command's own, 124 after a
// timeout, 128+N after death by signal N, 125-127 when the command did not start.
func (r *Result) ExitStatus() int {
	if r.TimedOut {
		return StatusTimeout
	}
	return r.ExitCode
}

func signalName(sig syscall.Signal) *string {
	name := unix.SignalName(sig)
	if name == "" {
		name = sig.String()
	}
	return &name
}
