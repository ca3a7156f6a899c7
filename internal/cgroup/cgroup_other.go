//go:build !linux

package cgroup

// Detect reports that there are no cgroups.
func Detect() Info {
	return Info{Parent: DefaultParent, Reason: "cgroups exist only on Linux"}
}

// New validates opts, then fails with ErrUnsupported.
func New(opts Options) (*Cgroup, error) {
	if _, err := opts.normalize(); err != nil {
		return nil, err
	}
	return nil, ErrUnsupported
}

// Reap fails with ErrUnsupported.
func Reap(parent, prefix string) ([]string, error) { return nil, ErrUnsupported }

// AddProc fails with ErrUnsupported.
func (c *Cgroup) AddProc(pid int) error { return ErrUnsupported }

// FD fails with ErrUnsupported.
func (c *Cgroup) FD() (int, error) { return -1, ErrUnsupported }

// Kill fails with ErrUnsupported.
func (c *Cgroup) Kill() error { return ErrUnsupported }

// Hits fails with ErrUnsupported.
func (c *Cgroup) Hits() (Hits, error) { return Hits{}, ErrUnsupported }

// Stats fails with ErrUnsupported.
func (c *Cgroup) Stats() (Stats, error) { return Stats{}, ErrUnsupported }

// Delete fails with ErrUnsupported.
func (c *Cgroup) Delete() error { return ErrUnsupported }

// Frozen fails with ErrUnsupported.
func (c *Cgroup) Frozen(fn func() error) error { return ErrUnsupported }

// Pause fails with ErrUnsupported.
func (c *Cgroup) Pause() error { return ErrUnsupported }

// Resume fails with ErrUnsupported.
func (c *Cgroup) Resume() error { return ErrUnsupported }

// Paused reports false.
func (c *Cgroup) Paused() bool { return false }

// Reclaim fails with ErrUnsupported.
func (c *Cgroup) Reclaim() error { return ErrUnsupported }

// MemoryUsage fails with ErrUnsupported.
func (c *Cgroup) MemoryUsage() (int64, error) { return 0, ErrUnsupported }
