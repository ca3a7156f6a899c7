package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/cgroup"
)

// CgroupPrefix starts the name of every sandbox's cgroup (cgroup.Reap takes it).
const CgroupPrefix = "sandbox-"

// cgroupName picks a fresh name for a sandbox's cgroup.
func cgroupName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return CgroupPrefix + hex.EncodeToString(b[:]), nil
}

// newCgroup creates the sandbox's own cgroup with cfg's limits (filled in: Unlimited
// is no limit). Failing to get one fails the sandbox: without it there is no
// whole-sandbox kill and no limit.
func newCgroup(cfg Config, name string) (*cgroup.Cgroup, error) {
	cg, err := cgroup.New(cgroup.Options{
		Name:        name,
		MemoryBytes: max(cfg.Memory, 0),
		Pids:        max(cfg.Pids, 0),
		CPUs:        cfg.CPUs,
	})
	if err != nil {
		var ce *cgroup.ControllerError
		if errors.As(err, &ce) {
			return nil, &MissingError{Mechanism: "cgroup controller " + ce.Controller, Err: err}
		}
		if errors.Is(err, cgroup.ErrUnsupported) {
			return nil, &MissingError{Mechanism: "cgroups", Err: err}
		}
		return nil, fmt.Errorf("sandbox cgroup: %w", err)
	}
	return cg, nil
}

// DefaultMemory is the memory limit of a sandbox that sets none: half of the host's
// memory, at most MaxDefaultMemory.
func DefaultMemory() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return MaxDefaultMemory
	}
	return min(MaxDefaultMemory, int64(si.Totalram)*int64(max(si.Unit, 1))/2)
}

// Stats is the sandbox's usage as its cgroup counts it (every process, the init too).
type Stats struct {
	CPUUser, CPUSys time.Duration
	// MemoryPeak is the largest memory use seen, in bytes (tmpfs included).
	MemoryPeak int64
	// OOMKills counts processes the OOM killer ended because of the memory limit.
	OOMKills int64
	// PidsLimitHits counts forks refused because of the pids limit.
	PidsLimitHits int64
	// Procs is the number of tasks in the sandbox now.
	Procs int64
}

// Stats reads the sandbox's cgroup.
func (s *Sandbox) Stats() (Stats, error) {
	cs, err := s.cg.Stats()
	if err != nil {
		return Stats{}, fmt.Errorf("sandbox stats: %w", err)
	}
	return Stats{
		CPUUser:       cs.CPUUser,
		CPUSys:        cs.CPUSystem,
		MemoryPeak:    cs.MemoryPeak,
		OOMKills:      cs.OOMKills,
		PidsLimitHits: cs.PidsLimitHits,
		Procs:         cs.Pids,
	}, nil
}

// MemoryUsage is the memory charged to the sandbox's cgroup now, in bytes
// (page cache and tmpfs included).
func (s *Sandbox) MemoryUsage() (int64, error) {
	n, err := s.cg.MemoryUsage()
	if err != nil {
		return 0, fmt.Errorf("sandbox stats: %w", err)
	}
	return n, nil
}

// Hits are Stats' counters of limits hit.
type Hits struct {
	OOMKills, PidsLimitHits int64
}

// Hits reads only the sandbox's counters of limits hit, cheaper than Stats:
// what each command of a persistent sandbox compares before and after it runs.
func (s *Sandbox) Hits() (Hits, error) {
	h, err := s.cg.Hits()
	if err != nil {
		return Hits{}, fmt.Errorf("sandbox stats: %w", err)
	}
	return Hits{OOMKills: h.OOMKills, PidsLimitHits: h.PidsLimitHits}, nil
}

// Frozen runs fn with every process of the sandbox, its init included, frozen
// through the cgroup: nothing in the sandbox writes its upper layer meanwhile.
func (s *Sandbox) Frozen(fn func() error) error {
	if err := s.cg.Frozen(fn); err != nil {
		return fmt.Errorf("sandbox frozen: %w", err)
	}
	return nil
}

// Pause freezes every process of the sandbox, its init included, until Resume:
// they use no CPU and run no instruction meanwhile. Destroy kills a paused
// sandbox like any other.
func (s *Sandbox) Pause() error {
	if err := s.cg.Pause(); err != nil {
		return fmt.Errorf("sandbox pause: %w", err)
	}
	return nil
}

// Resume thaws a paused sandbox: its processes continue where they stopped.
func (s *Sandbox) Resume() error {
	if err := s.cg.Resume(); err != nil {
		return fmt.Errorf("sandbox resume: %w", err)
	}
	return nil
}
