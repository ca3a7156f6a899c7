package sandbox

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// StageExec is the SetupError stage of a command that could not be started: Errno
// ENOENT (not found; a shell would exit 127) or EACCES (not executable; 126).
const StageExec = "exec"

// Exit is how a sandbox ended.
type Exit struct {
	// ExitCode is the command's exit code, or -1 if it was killed by a signal or
	// never ran.
	ExitCode int
	// Signal is the signal that killed the command, or, if the whole sandbox was
	// killed before the command's status was known, the signal that killed the init.
	Signal syscall.Signal
	// Rusage is the usage of the command and every process it left behind.
	Rusage Rusage
	// SetupErr is a *SetupError if the command never ran.
	SetupErr error
	// Timings says where the time from Start to the end went, in order.
	Timings []Phase
	// Landlock is what Landlock enforced, e.g. "abi=7 refer truncate ioctl_dev net
	// scope_signals scope_abstract_unix".
	Landlock string
	// InitUID and InitCapEff are what the init saw when it started: uid 0 with every
	// capability of the sandbox's user namespace as root, uid 1000 with the ones it
	// needs for setup otherwise. It drops them before the command (as root keeping
	// the four it needs to run commands as uid 1000; see nsinit's keptCaps).
	InitUID    int
	InitCapEff uint64
}

// Rusage is CPU time and peak memory of the command tree.
type Rusage struct {
	User, Sys time.Duration
	// MaxRSS is the largest resident set of any single process, in bytes.
	MaxRSS int64
}

// Cleanup is what killing a command's remaining processes found.
type Cleanup struct {
	// Rusage is the usage of the processes reaped after the main process exited.
	Rusage Rusage
	// Survivors is the number of the command's processes that could not be
	// killed (they die with the sandbox).
	Survivors int
}

// Phase is one step of a sandbox's life and how long it took.
type Phase struct {
	Name string
	Dur  time.Duration
}

// SetupError is a failure of the init before the command ran, or of starting it.
type SetupError struct {
	// Stage is what failed, e.g. "mount /proc" or StageExec.
	Stage string
	// Errno is the system error, if there was one.
	Errno syscall.Errno
	// Detail is the error text.
	Detail string
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("sandbox setup: %s: %s", e.Stage, e.Detail)
}

// Unwrap returns the Errno, so errors.Is(err, syscall.ENOENT) works.
func (e *SetupError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// Sentinel errors.
var (
	// ErrUnsupported: this host lacks a mechanism the sandbox needs; the error
	// names it. Start fails closed.
	ErrUnsupported = errors.New("sandbox: unsupported on this host")
	// ErrNoReport: the init ended without reporting (it was killed from outside,
	// e.g. by the OOM killer, or crashed).
	ErrNoReport = errors.New("sandbox: init ended without a report")
	// ErrDone: the sandbox has already been destroyed.
	ErrDone = errors.New("sandbox: already destroyed")
)

// MissingError says which mechanism is missing; it matches ErrUnsupported.
type MissingError struct {
	Mechanism string
	Err       error
}

func (e *MissingError) Error() string {
	if e.Err == nil {
		return "sandbox: " + e.Mechanism + " unavailable"
	}
	return "sandbox: " + e.Mechanism + " unavailable: " + e.Err.Error()
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *MissingError) Is(target error) bool { return target == ErrUnsupported }

// Unwrap returns the underlying error.
func (e *MissingError) Unwrap() error { return e.Err }
