package env

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox"
)

// OnTimeout values: what happens to an environment when its TTL passes.
const (
	OnTimeoutDestroy = "destroy" // the default
	OnTimeoutPause   = "pause"   // paused; Resume starts a new TTL
)

// Pause freezes every process of the environment (cgroup freezer): they use no
// CPU until Resume, and a command's output stream stands still. The workspace
// stays readable and writable through the file operations; Exec and Start fail
// with ErrPaused (resume first: nothing resumes implicitly, so that a paused
// environment's cost stays where its owner put it). Pausing a paused
// environment is not an error.
//
// With o.ToDisk, an environment created with LayerDisk also leaves RAM: what
// its processes wrote to its writable layers is written back to its disk and
// every page the kernel can reclaim without killing is dropped (the layers'
// and that of files its processes read; sandbox.Sandbox.Evict). The frozen
// processes keep their open files; after Resume what they touch is read back
// from disk as they touch it. Their own memory, /tmp and /dev/shm stay in RAM
// (a sandbox never swaps). A LayerMemory environment's layers are a tmpfs,
// whose pages could leave RAM only to swap: ToDisk is refused (ErrInvalid).
// The reaper's pauses (IdlePause, OnTimeoutPause) go to disk whenever the
// environment's layers are there.
func (m *Manager) Pause(ctx context.Context, owner Owner, id string, o PauseOptions) (Info, error) {
	e, done, err := m.use(owner, id)
	if err != nil {
		return Info{}, err
	}
	defer done()
	if o.ToDisk && e.k.layer != LayerDisk {
		return Info{}, fmt.Errorf("%w: environment %s has its writable layer in memory (a tmpfs, which can leave RAM only to swap, and sandboxes do not swap): to pause one to disk, create it with layer disk", ErrInvalid, e.id)
	}
	if err := e.pause(o.ToDisk); err != nil {
		return Info{}, err
	}
	return e.describe(), nil
}

// Resume thaws a paused environment: its processes continue where they stopped.
// An environment paused at its TTL (OnTimeoutPause) gets a new TTL from now.
// Resuming a running environment is not an error.
func (m *Manager) Resume(ctx context.Context, owner Owner, id string) (Info, error) {
	e, done, err := m.use(owner, id)
	if err != nil {
		return Info{}, err
	}
	defer done()
	e.pauseMu.Lock()
	defer e.pauseMu.Unlock()
	if err := e.sandbox().Resume(); err != nil {
		return Info{}, fmt.Errorf("environment %s: %w", e.id, err)
	}
	e.mu.Lock()
	now := time.Now().UTC()
	e.paused, e.onDisk = false, false
	e.info.PausedAt = time.Time{}
	renewed := e.ttl > 0 && now.After(e.info.ExpiresAt)
	if renewed {
		e.info.ExpiresAt = now.Add(e.ttl)
	}
	e.mu.Unlock()
	if renewed {
		if err := e.saveRecord(); err != nil {
			return Info{}, err
		}
	}
	return e.describe(), nil
}

// pause freezes e, and evicts its layers toDisk (the reaper's way in too: it
// is no API call).
func (e *environment) pause(toDisk bool) error {
	e.pauseMu.Lock()
	defer e.pauseMu.Unlock()
	sb := e.sandbox()
	if err := sb.Pause(); err != nil {
		return fmt.Errorf("environment %s: %w", e.id, err)
	}
	e.mu.Lock()
	if !e.paused {
		e.paused = true
		e.info.PausedAt = time.Now().UTC()
	}
	e.mu.Unlock()
	if !toDisk {
		return nil
	}
	ns, ok := sb.(*sandbox.Sandbox)
	if !ok {
		return fmt.Errorf("%w: environment %s is at the gvisor level, whose layers stay in memory", ErrInvalid, e.id)
	}
	if _, err := ns.Evict(); err != nil {
		return fmt.Errorf("environment %s: pause to disk: %w", e.id, err) // paused still, in RAM
	}
	e.mu.Lock()
	e.onDisk = true
	e.mu.Unlock()
	return nil
}

// running fails with ErrPaused when e is paused: a command started now would
// wait, frozen, for a Resume nobody asked for.
func (e *environment) running() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.paused {
		return fmt.Errorf("environment %s: %w", e.id, ErrPaused)
	}
	return nil
}
