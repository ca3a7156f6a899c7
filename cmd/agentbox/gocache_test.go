package main

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/gocache"
	"github.com/agentbox/agentbox/internal/task"
)

var (
	warmOnce sync.Once
	warmErr  error
)

// warmGoCache fills goCacheDir once, in-process, as `agentbox eval` and `grade
// --oracle` would on first use: the compile (~30 s of CPU here) is bounded by each
// Go task's timeout, 5 min of wall time, which a machine busy with other test
// suites can exceed. Warmed here with half an hour, the CLI finds the cache warm.
func warmGoCache(t *testing.T) {
	t.Helper()
	warmOnce.Do(func() {
		dir := t.TempDir()
		tasks, err := task.Builtin(filepath.Join(dir, "suite"))
		if err != nil {
			warmErr = err
			return
		}
		m, err := env.NewManager(env.Config{StateDir: filepath.Join(dir, "state")})
		if err != nil {
			warmErr = err
			return
		}
		defer m.Close()
		var goTasks []*task.Task
		for _, tk := range tasks {
			if tk.Language == task.Go {
				slow := *tk
				slow.Limits.Timeout = 30 * time.Minute
				goTasks = append(goTasks, &slow)
			}
		}
		warmErr = gocache.Warm(t.Context(), m, env.Owner{Tenant: "test"}, goTasks, goCacheDir, "", "")
	})
	if warmErr != nil {
		t.Fatalf("warm the Go build cache: %v", warmErr)
	}
}
