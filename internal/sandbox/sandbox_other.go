//go:build !linux

package sandbox

import (
	"os"
	"syscall"
	"time"
)

// Sandbox is a running sandbox; on this system none can run.
type Sandbox struct{}

// Stats is the sandbox's usage as its cgroup counts it.
type Stats struct {
	CPUUser, CPUSys time.Duration
	MemoryPeak      int64
	OOMKills        int64
	PidsLimitHits   int64
	Procs           int64
}

// CgroupPrefix starts the name of every sandbox's cgroup.
const CgroupPrefix = "sandbox-"

// Layer is a sealed sandbox's upper layer; on this system there is none.
type Layer struct{}

// Seal fails with ErrUnsupported.
func (s *Sandbox) Seal() (*Layer, error) { return nil, ErrUnsupported }

// Bytes fails with ErrUnsupported.
func (l *Layer) Bytes() (int64, error) { return 0, ErrUnsupported }

// UpperBytes fails with ErrUnsupported.
func (s *Sandbox) UpperBytes() (int64, error) { return 0, ErrUnsupported }

// Dir returns "".
func (l *Layer) Dir() string { return "" }

// Close does nothing.
func (l *Layer) Close() error { return nil }

// Eviction is what Evict released.
type Eviction struct {
	Before, After int64
}

// MemoryUsage fails with ErrUnsupported.
func (s *Sandbox) MemoryUsage() (int64, error) { return 0, ErrUnsupported }

// Evict fails with ErrUnsupported.
func (s *Sandbox) Evict() (Eviction, error) { return Eviction{}, ErrUnsupported }

// Start fails: namespace isolation exists only on Linux.
func Start(cfg Config, stdio Stdio) (*Sandbox, error) {
	return nil, &MissingError{Mechanism: "linux namespaces"}
}

// Probe reports that nothing is supported.
func Probe() Report {
	return Report{Checks: []Check{{Name: "linux namespaces", Required: true, Detail: "not Linux"}}}
}

// Wait fails with ErrUnsupported.
func (s *Sandbox) Wait() (Exit, error) { return Exit{ExitCode: -1}, ErrUnsupported }

// Terminate fails with ErrUnsupported.
func (s *Sandbox) Terminate() error { return ErrUnsupported }

// Kill fails with ErrUnsupported.
func (s *Sandbox) Kill() error { return ErrUnsupported }

// Destroy fails with ErrUnsupported.
func (s *Sandbox) Destroy() (int, error) { return 0, ErrUnsupported }

// Leave fails with ErrUnsupported.
func (s *Sandbox) Leave() (int, error) { return 0, ErrUnsupported }

// Hits are Stats' counters of limits hit.
type Hits struct {
	OOMKills, PidsLimitHits int64
}

// Hits fails with ErrUnsupported.
func (s *Sandbox) Hits() (Hits, error) { return Hits{}, ErrUnsupported }

// Stats fails with ErrUnsupported.
func (s *Sandbox) Stats() (Stats, error) { return Stats{}, ErrUnsupported }

// Pid returns 0.
func (s *Sandbox) Pid() int { return 0 }

// HostUID returns -1.
func (s *Sandbox) HostUID() int { return -1 }

// UpperDir returns "".
func (s *Sandbox) UpperDir() string { return "" }

// RootFull returns false.
func (s *Sandbox) RootFull() bool { return false }

// ReapStale fails with ErrUnsupported.
func ReapStale() error { return ErrUnsupported }

// Process is a command of a persistent sandbox; on this system none can run.
type Process struct{}

// Exec fails with ErrUnsupported.
func (s *Sandbox) Exec(cfg ExecConfig, stdio Stdio) (*Process, error) { return nil, ErrUnsupported }

// WorkspaceDir returns nil.
func (s *Sandbox) WorkspaceDir() *os.File { return nil }

// Landlock returns "".
func (s *Sandbox) Landlock() string { return "" }

// Frozen fails with ErrUnsupported.
func (s *Sandbox) Frozen(fn func() error) error { return ErrUnsupported }

// Pid returns 0.
func (p *Process) Pid() int { return 0 }

// Wait fails with ErrUnsupported.
func (p *Process) Wait() (Exit, error) { return Exit{ExitCode: -1}, ErrUnsupported }

// Signal fails with ErrUnsupported.
func (p *Process) Signal(sig syscall.Signal) error { return ErrUnsupported }

// Kill fails with ErrUnsupported.
func (p *Process) Kill() (Cleanup, error) { return Cleanup{}, ErrUnsupported }

// DefaultMemory returns MaxDefaultMemory: this system runs no sandbox to size.
func DefaultMemory() int64 { return MaxDefaultMemory }

// Pause fails with ErrUnsupported.
func (s *Sandbox) Pause() error { return ErrUnsupported }

// Resume fails with ErrUnsupported.
func (s *Sandbox) Resume() error { return ErrUnsupported }

// Leftover returns the zero Leftover.
func (s *Sandbox) Leftover() Leftover { return Leftover{} }

// Discard fails with ErrUnsupported.
func Discard(l Leftover) error { return ErrUnsupported }
