package grade

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/task"
)

// goCache is a build cache warmed on the host by running each built-in Go task's
// test command once, with the task's own environment (so the cache keys match).
// A cold cache costs ~18 s per Go task here; the grader copies this one into each
// run instead, as Options.GoCache says.
var (
	goCacheOnce sync.Once
	goCacheDir  string
	goCacheErr  string
)

func goCache(t *testing.T) string {
	t.Helper()
	goCacheOnce.Do(func() {
		goCacheDir = filepath.Join(suiteDir, "gocache")
		for _, tk := range suiteTasks {
			if tk.Language != task.Go {
				continue
			}
			work := filepath.Join(suiteDir, "warm-"+tk.ID)
			if err := os.CopyFS(work, os.DirFS(tk.Repo)); err != nil {
				goCacheErr = err.Error()
				return
			}
			if err := os.CopyFS(work, os.DirFS(tk.Hidden)); err != nil {
				goCacheErr = err.Error()
				return
			}
			cmd := exec.Command(tk.TestCommand[0], tk.TestCommand[1:]...)
			cmd.Dir = work
			cmd.Env = append([]string{"PATH=" + DefaultPath, "HOME=" + work},
				tk.Env(filepath.Join(suiteDir, "scratch-"+tk.ID))...)
			cmd.Env = append(cmd.Env, "GOCACHE="+goCacheDir)
			cmd.Run() // the starting code fails its tests; only the cache matters
		}
		if _, err := os.Stat(goCacheDir); err != nil {
			goCacheErr = err.Error()
		}
	})
	if goCacheErr != "" {
		t.Fatalf("warm go cache: %s", goCacheErr)
	}
	return goCacheDir
}
