package grade

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/task"
)

// nativeG01 is G01 graded with plain go test -json (testdata/native).
func nativeG01(t *testing.T) *task.Task {
	t.Helper()
	tk, err := task.Load(filepath.Join("testdata", "native", "G01"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestCanariesNoFalsePositive: with canaries, the reference fix of native G01
// resolves under several seeds (no canary passes for a correct implementation),
// and the starting code is not resolved and not forged.
func TestCanariesNoFalsePositive(t *testing.T) {
	m := envtest.New(t)
	tk := nativeG01(t)
	ref, err := tk.ReadReference()
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []int64{1, 2, 3} {
		v := gradeIt(t, m, tk, ref, Options{GoCache: goCache(t), Seed: seed})
		if !v.Resolved || v.Tampered || len(v.Forged) > 0 {
			t.Errorf("seed %d: the reference: %s", seed, dump(v))
		}
	}
	v := gradeIt(t, m, tk, nil, Options{GoCache: goCache(t)})
	if v.Resolved || v.Tampered || len(v.FailToPass.Passed) > 0 {
		t.Errorf("the starting code: %s", dump(v))
	}
}

// TestCanaryCatchRate grades every G01 forgery of testdata/adversarial against
// native G01 (no judge) twice, without canaries and with them, and reports how
// many of the forgeries that work without canaries the canaries catch (graded
// tampered, forged). None may be resolved with canaries but the canary holes its
// header names (canary-hole:), which are asserted as they are.
func TestCanaryCatchRate(t *testing.T) {
	if testing.Short() {
		t.Skip("grades every G01 forgery twice")
	}
	m := envtest.New(t)
	tk := nativeG01(t)
	var (
		mu   sync.Mutex
		rows []string
	)
	t.Cleanup(func() {
		slices.Sort(rows)
		worked, caught := 0, 0
		for _, r := range rows {
			if strings.Contains(r, "\tresolved\t") {
				worked++
				if strings.HasSuffix(r, "\tforged") {
					caught++
				}
			}
		}
		msg := fmt.Sprintf("canary catch rate on native G01: %d of the %d forgeries that are resolved without canaries are caught\n%s\t%s\t%s\n%s",
			caught, worked, "patch", "without canaries", "with canaries", strings.Join(rows, "\n"))
		t.Log(msg)
		fmt.Fprintln(os.Stderr, "grade: TestCanaryCatchRate: "+msg)
	})
	for _, a := range loadAdversarial(t) {
		if a.task != "G01" {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			plain := gradeIt(t, m, tk, a.patch, Options{GoCache: goCache(t), NoCanaries: true})
			with := gradeIt(t, m, tk, a.patch, Options{GoCache: goCache(t)})
			if with.Resolved != (a.canaryHole != "") {
				t.Errorf("resolved with canaries: %v, want %v (canary-hole: %q): %s", with.Resolved, a.canaryHole != "", a.canaryHole, dump(with))
			}
			outcome := func(v Verdict) string {
				if len(v.Forged) > 0 {
					return "forged"
				}
				return string(v.Outcome)
			}
			mu.Lock()
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s", a.name, outcome(plain), outcome(with)))
			mu.Unlock()
		})
	}
}

// TestCanaryLayoutSecret: which copy holds which canary is not drawn from the
// grade's seed, which the code under test reads in AGENTBOX_SEED: with it, a
// forger could replay the draws and tell each canary from its test.
func TestCanaryLayoutSecret(t *testing.T) {
	tk := nativeG01(t)
	read := func() string {
		c, err := newCanaries(t.Context(), tk, t.TempDir(), DefaultPath)
		if err != nil || c == nil || c.n == 0 {
			t.Fatalf("canaries %+v, %v", c, err)
		}
		var b strings.Builder
		for _, d := range c.dirs {
			for _, name := range tk.HiddenFiles {
				data, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(name)))
				if err != nil {
					t.Fatal(err)
				}
				b.Write(data)
			}
		}
		return b.String()
	}
	if first, second := read(), read(); first == second {
		t.Error("two grades drew the same canaries: the layout is not secret")
	}
}
