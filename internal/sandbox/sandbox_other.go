//go:build !linux

package sandbox

import "time"

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

// Stats fails with ErrUnsupported.
func (s *Sandbox) Stats() (Stats, error) { return Stats{}, ErrUnsupported }

// Pid returns 0.
func (s *Sandbox) Pid() int { return 0 }

// HostUID returns -1.
func (s *Sandbox) HostUID() int { return -1 }

// UpperDir returns "".
func (s *Sandbox) UpperDir() string { return "" }

// ReapStale fails with ErrUnsupported.
func ReapStale() error { return ErrUnsupported }
