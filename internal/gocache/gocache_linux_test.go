package gocache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

var owner = env.Owner{Tenant: "warm"}

// TestWarm warms a cache from a built-in Go task in a sandbox (one: a cold
// compile costs ~20 s of CPU): it holds compiled packages and none of the hidden
// tests' names, its stamp names the task once, and a second warm-up of the same
// code leaves it as it is.
func TestWarm(t *testing.T) {
	testenv.SkipShort(t, "warms a Go build cache in a sandbox (~20 s from cold)")
	m := envtest.New(t)
	tasks, err := task.Builtin(filepath.Join(t.TempDir(), "suite"))
	if err != nil {
		t.Fatal(err)
	}
	var g01 *task.Task
	for _, tk := range tasks {
		if tk.ID == "G01" {
			g01 = tk
		}
	}
	if g01 == nil || g01.Language != task.Go {
		t.Fatal("the built-in suite has no Go task G01: update this test")
	}
	// The compile gets the time a loaded machine needs, not the task's own.
	g01.Limits.Timeout = 15 * time.Minute
	// A Python task among them is left out.
	goTasks := []*task.Task{g01, tasks[0]}
	if tasks[0].Language == task.Go {
		t.Fatalf("the built-in suite's first task %s is in Go: update this test", tasks[0].ID)
	}
	dir := filepath.Join(t.TempDir(), "gocache")
	if err := Warm(t.Context(), m, owner, goTasks, dir, "", ""); err != nil {
		t.Fatal(err)
	}
	names, err := files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 100 {
		t.Fatalf("the warm cache holds %d files", len(names))
	}
	stamp, err := os.ReadFile(filepath.Join(dir, warmStamp))
	if err != nil || strings.Count(string(stamp), "\n") != 1 || !strings.HasPrefix(string(stamp), "G01 ") {
		t.Fatalf("stamp %q (%v): want one line, G01's", stamp, err)
	}
	// No compiled hidden worker in the cache: its strings would be in the objects.
	hidden := "wraps_last"
	if b, err := os.ReadFile(filepath.Join(g01.Hidden, "agentbox_worker", "main.go")); err != nil || !strings.Contains(string(b), hidden) {
		t.Fatalf("G01's hidden worker no longer holds %q (%v): update this test", hidden, err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), hidden) {
			t.Fatalf("%s in the cache holds %q: hidden tests leaked into it", n, hidden)
		}
	}
	// A second warm-up of the same code does nothing: a warm-up replaces the
	// directory, so the same directory means none ran.
	before, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Warm(t.Context(), m, owner, goTasks, dir, "", ""); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(dir)
	if err != nil || !os.SameFile(before, after) {
		t.Fatalf("the second warm-up replaced the cache (%v)", err)
	}
}
