package attack

import (
	"strings"
	"testing"
)

// TestAbuse_DiffRenderLimits: a command could make its own run an agentbox error
// (issue 10, item 7): 300 nested directories failed --diff-out on the diff's depth
// limit and `run` exited 125. Every limit on what the diff renders must degrade: what
// cannot be rendered is omitted with a note, the rest of the diff is written, and the
// run's status stays the command's own. Trees: 300 and 5,000 nested directories with
// a file at the bottom, directories with 255-byte names nested past PATH_MAX, and
// 100,000 empty files in one directory (whose cost to agentbox must stay bounded).
func TestAbuse_DiffRenderLimits(t *testing.T) {
	t.Parallel()
	deepNote := "# agentbox: omitted deep/" + strings.Repeat("d/", 255) + "d: directory more than 256 levels deep"
	for _, tc := range []struct {
		name   string
		args   []string
		want   []string // in the diff
		short  bool     // runs under -short
		maxRSS int64    // agentbox's peak resident memory, bytes (0: not checked)
	}{
		{"300 levels", []string{"deeptree", "300"}, []string{deepNote}, true, 0},
		{"5000 levels", []string{"deeptree", "5000"}, []string{deepNote}, false, 0}, // the sandbox's overlay takes 8 s to make them
		{"past PATH_MAX", []string{"deeptree", "40", "255"}, []string{": path longer than 4096 bytes\n"}, true, 0},
		{"100000 files", []string{"manyfiles", "100000"}, []string{"diff --git a/many/99999 b/many/99999\nnew file mode 100644\n"}, false, 192 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if testing.Short() && !tc.short {
				t.Skip("slow: the tree takes the sandbox seconds to make")
			}
			requireSandbox(t)
			fx := newFixture(t)
			r := fx.run(boxOpts{diffOut: true, cmd: fx.attack(tc.args[0], tc.args[1:]...), flags: []string{"--timeout", "5m"}})
			r.at.mustBeDone(t, tc.args[0])
			r.at.mustSucceed(t, "the sandbox may build the tree in its overlay", r.at.withPrefix("")...)
			if r.exit != 0 || r.res.ExitCode != 0 || r.res.Error != "" {
				t.Errorf("the command's tree made the run agentbox's failure: agentbox exit %d, result exit %d, error %q",
					r.exit, r.res.ExitCode, r.res.Error)
			}
			for _, want := range append(tc.want, "+++ b/top.txt\n@@ -0,0 +1,1 @@\n+top\n") {
				if !strings.Contains(r.diff, want) {
					t.Errorf("--diff-out lacks %q (%d bytes):\n%.1500s", want, len(r.diff), r.diff)
				}
			}
			if strings.Contains(r.diff, "bottom.txt") && tc.args[0] == "deeptree" {
				t.Errorf("--diff-out carries the file below the depth or length limit")
			}
			if n := strings.Count(r.diff, "diff --git a/many/"); tc.args[0] == "manyfiles" && n != 100000 {
				t.Errorf("--diff-out names %d of the 100,000 files", n)
			}
			t.Logf("diff %d bytes; agentbox: %v wall, peak RSS %d MiB", len(r.diff), r.duration, r.maxRSS>>20)
			if tc.maxRSS > 0 && r.maxRSS > tc.maxRSS {
				t.Errorf("agentbox's peak RSS %d MiB passes %d MiB", r.maxRSS>>20, tc.maxRSS>>20)
			}
			fx.verifyHost(r)
		})
	}
}
