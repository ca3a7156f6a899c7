package env

import (
	"context"
	"strings"
	"testing"
)

// A command can make its environment's diff exceed every limit on what the diff
// renders; the diff then degrades (omitted parts and the cut named in the text), it
// never fails: an eval would otherwise record the agent's attempt as agentbox's own
// error (issue 10, item 7).
func TestDiffDegradesAtItsLimits(t *testing.T) {
	m := newManager(t, Config{MaxDiffBytes: 4096})
	id := create(t, m, CreateOptions{Workspace: fixture(t)}).ID
	sh(t, m, id, `mkdir -p $(printf 'd/%.0s' $(seq 300)) && echo deep > $(printf 'd/%.0s' $(seq 300))f && `+
		`echo top > a-top.txt && for i in $(seq 200); do echo "file $i" > z$i.txt; done`)
	diff, err := m.Diff(context.Background(), alice, id)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	for _, want := range []string{"+++ b/a-top.txt\n", "# agentbox: omitted " + strings.Repeat("d/", 256) + "d: directory more than 256 levels deep",
		"# agentbox: diff truncated before z", ": limit of 4096 bytes\n"} {
		if !strings.Contains(string(diff), want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
}
