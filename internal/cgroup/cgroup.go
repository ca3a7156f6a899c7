package cgroup

import (
	"sync"
	"time"
)

// Controller names as the kernel spells them.
const (
	Memory  = "memory"
	Pids    = "pids"
	CPU     = "cpu"
	CPUAcct = "cpuacct"
	Freezer = "freezer"
)

// controllers lists, in report order, the controllers a run joins when present.
var controllers = []string{Memory, Pids, CPU, CPUAcct, Freezer}

// DefaultParent is the directory, below the root of each hierarchy, that holds
// agentbox's groups.
const DefaultParent = "agentbox"

// DefaultKillTimeout bounds Kill when Options.KillTimeout is zero.
const DefaultKillTimeout = 10 * time.Second

// Options describes one group. The zero value of each limit means "no limit".
type Options struct {
	// Name is the group's directory name: 1 to 128 characters from [A-Za-z0-9._-],
	// starting with a letter or digit. Required.
	Name string
	// Parent is the directory below each hierarchy root that holds the group,
	// DefaultParent when empty. Slash-separated components follow the rules of Name.
	Parent string
	// MemoryBytes caps RAM (with swap off); 0 is no limit, otherwise at least 1 MiB.
	MemoryBytes int64
	// Pids caps the number of tasks (threads count); 0 is no limit.
	Pids int64
	// CPUs caps CPU time as a number of CPUs (0.5 = half of one); 0 is no limit,
	// otherwise at least 0.01.
	CPUs float64
	// KillTimeout bounds Kill; DefaultKillTimeout when zero.
	KillTimeout time.Duration
}

// Cgroup is one group, present in one directory (v2) or one per hierarchy (v1).
// Its methods are safe for concurrent use.
type Cgroup struct {
	name        string
	version     int               // 1 or 2
	dir         string            // v2: the group's directory
	dirs        map[string]string // v1: controller -> the group's directory in its hierarchy
	paths       []string          // every distinct directory, v1 freezer first
	killTimeout time.Duration

	killMu sync.Mutex // one Kill at a time: v1 rounds must not thaw each other
	paused bool       // in killMu: frozen by Pause until Resume
	mu     sync.Mutex
	fd     int // v2: directory fd for clone-into-cgroup, -1 until FD is called
	// hitFiles are the control files Hits reads, kept open (under mu) and
	// read again at offset 0, until Delete.
	hitFiles map[string]int
}

// Name returns the group's name.
func (c *Cgroup) Name() string { return c.name }

// Version returns 1 or 2: the kind of hierarchy the group lives in.
func (c *Cgroup) Version() int { return c.version }

// Paths returns the group's directories (one on v2, one per hierarchy on v1).
func (c *Cgroup) Paths() []string { return append([]string(nil), c.paths...) }

// Stats is the usage of a group. A field stays zero when the controller that
// reports it is absent (or, for MemoryPeak, when a v2 kernel older than 5.19
// lacks memory.peak).
type Stats struct {
	CPUUser   time.Duration // user CPU time of all tasks, dead or alive
	CPUSystem time.Duration // system CPU time
	// MemoryPeak is the largest memory use seen, in bytes, page cache and tmpfs
	// included. A task being OOM-killed may take it a few pages past the limit.
	MemoryPeak int64
	// OOMKills counts tasks of the group killed by the OOM killer.
	OOMKills int64
	// PidsLimitHits counts forks refused because a pids limit was reached.
	PidsLimitHits int64
	// Pids counts the group's tasks (threads) now. Zombies count until reaped.
	Pids int64
}

// Hits are Stats' counters of limits hit.
type Hits struct {
	OOMKills, PidsLimitHits int64
}
