package env

import (
	"context"
	"fmt"
	"time"
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
func (m *Manager) Pause(ctx context.Context, owner Owner, id string) (Info, error) {
	e, done, err := m.use(owner, id)
	if err != nil {
		return Info{}, err
	}
	defer done()
	if err := e.pause(); err != nil {
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
	e.paused = false
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

// pause freezes e (the reaper's way in too: it is no API call).
func (e *environment) pause() error {
	e.pauseMu.Lock()
	defer e.pauseMu.Unlock()
	if err := e.sandbox().Pause(); err != nil {
		return fmt.Errorf("environment %s: %w", e.id, err)
	}
	e.mu.Lock()
	if !e.paused {
		e.paused = true
		e.info.PausedAt = time.Now().UTC()
	}
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
