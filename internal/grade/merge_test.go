package grade

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/agentbox/agentbox/internal/task"
)

func TestMerge(t *testing.T) {
	p, f, e := task.OutcomePass, task.OutcomeFail, task.OutcomeError
	runs := []task.Results{
		{Tests: map[string]task.Outcome{"stable": p, "flips": p, "fails": f, "vanishes": p}},
		{Tests: map[string]task.Outcome{"stable": p, "flips": e, "fails": f}},
		{Tests: map[string]task.Outcome{"stable": p, "flips": p, "fails": f, "vanishes": p}},
	}
	res, flaky := merge(runs)
	if want := []string{"flips", "vanishes"}; !slices.Equal(flaky, want) {
		t.Errorf("flaky = %v, want %v", flaky, want)
	}
	for id, want := range map[string]task.Outcome{"stable": p, "flips": e, "fails": f, "vanishes": ""} {
		if got := res.Outcome(id); got != want {
			t.Errorf("%s: outcome %q, want %q (a test missing from one run did not pass it)", id, got, want)
		}
	}
	one, flaky := merge(runs[:1])
	if flaky != nil || one.Outcome("flips") != p {
		t.Errorf("one run: %v %v", one, flaky)
	}
}

func sscanHunk(hdr string, o1, n1, o2, n2 *int) (int, error) {
	return fmt.Sscanf(hdr, "@@ -%d,%d +%d,%d @@", o1, n1, o2, n2)
}

func itoa(i int) string { return strconv.Itoa(i) }
