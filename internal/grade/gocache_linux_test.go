package grade

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestWarmGoCache checks the package's cache, warmed from the built-in Go tasks in
// sandboxes: it holds compiled packages and none of the hidden tests' names, a
// second warm-up of the same code does nothing, and grading with it is fast.
func TestWarmGoCache(t *testing.T) {
	testenv.SkipShort(t, "warms a Go build cache in sandboxes (~30 s from cold)")
	m := envtest.New(t)
	start := time.Now()
	dir := goCache(t)
	cold := time.Since(start) // zero if another test warmed it first
	var goTasks []*task.Task
	for _, tk := range suiteTasks {
		if tk.Language == task.Go {
			goTasks = append(goTasks, tk)
		}
	}
	names, err := cacheFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 100 {
		t.Fatalf("the warm cache holds %d files", len(names))
	}
	start = time.Now()
	if err := WarmGoCache(t.Context(), m, owner, goTasks, dir, ""); err != nil {
		t.Fatal(err)
	}
	again := time.Since(start)
	t.Logf("warm-up: %v from cold (or 0: warmed by an earlier test), %v again (%d files)", cold, again, len(names))
	stamp, err := os.ReadFile(filepath.Join(dir, warmStamp))
	if err != nil || strings.Count(string(stamp), "\n") != len(goTasks) {
		t.Fatalf("stamp %q (%v): want one line per Go task", stamp, err)
	}
	// No compiled hidden test in the cache: its test names would be in the objects.
	hidden := "TestDoCallsOpAtMostAttemptsTimes"
	if b, err := os.ReadFile(filepath.Join(builtin(t, "G01").Hidden, "retry_hidden_test.go")); err == nil && !contains(b, hidden) {
		t.Fatalf("G01's hidden test no longer defines %s: update this test", hidden)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if contains(b, hidden) {
			t.Fatalf("%s in the cache holds %q: hidden tests leaked into it", n, hidden)
		}
	}

	tk := builtin(t, "G01")
	ref, err := tk.ReadReference()
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	v := gradeIt(t, m, tk, ref, Options{GoCache: dir})
	if !v.Resolved {
		t.Fatalf("G01 reference with the warmed cache: %s", dump(v))
	}
	t.Logf("G01 graded in %v with the warmed cache", time.Since(start))
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
