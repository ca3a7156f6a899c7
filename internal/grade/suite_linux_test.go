package grade

import (
	"slices"
	"testing"

	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestBuiltinOracle is the oracle check: every built-in task's reference patch
// resolves it and the empty patch does not, graded in real environments; and
// grading leaves the task directory as it was.
func TestBuiltinOracle(t *testing.T) {
	testenv.SkipShort(t, "grades every built-in task's reference and candidates (~35 s)")
	m := envtest.New(t)
	if suiteErr != nil {
		t.Fatal(suiteErr)
	}
	if len(suiteTasks) < 7 {
		t.Fatalf("%d built-in tasks, want at least 7", len(suiteTasks))
	}
	for _, tk := range suiteTasks {
		t.Run(tk.ID, func(t *testing.T) {
			var o Options
			if tk.Language == task.Go {
				o.GoCache = goCache(t)
			}
			before := testenv.TreeHash(t, tk.Dir)
			ref, err := tk.ReadReference()
			if err != nil {
				t.Fatal(err)
			}
			v := gradeIt(t, m, tk, ref, o)
			if !v.Resolved || v.Tampered || !v.PatchApplied || v.ApplyMethod != "strict" {
				t.Errorf("reference patch: %s", dump(v))
			}
			if len(v.FailToPass.Passed) != len(tk.FailToPass) || len(v.PassToPass.Passed) != len(tk.PassToPass) {
				t.Errorf("reference patch: not every listed test passed: %s", dump(v))
			}

			v = gradeIt(t, m, tk, nil, o)
			if v.Resolved || v.Tampered || v.ApplyMethod != "empty" {
				t.Errorf("empty patch: %s", dump(v))
			}
			// On the starting code exactly the fail_to_pass tests fail.
			if !slices.Equal(v.FailToPass.Failed, tk.FailToPass) || len(v.PassToPass.Failed) != 0 {
				t.Errorf("empty patch: want fail_to_pass failed and pass_to_pass passed: %s", dump(v))
			}
			if after := testenv.TreeHash(t, tk.Dir); after != before {
				t.Errorf("grading modified the task directory")
			}
		})
	}
}
