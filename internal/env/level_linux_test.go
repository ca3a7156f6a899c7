package env

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/testenv"
)

// levels are the isolation levels an environment can have.
var levels = []runner.Isolation{runner.IsolationNamespace, runner.IsolationGvisor}

// requireLevel skips (fails under CI) where level cannot run; the gvisor
// level's state goes to the test's own TMPDIR.
func requireLevel(t *testing.T, level runner.Isolation) {
	t.Helper()
	if level == runner.IsolationGvisor {
		testenv.SkipShort(t, "starts gVisor sandboxes")
		_, err := exec.LookPath("runsc")
		testenv.Require(t, err == nil, "runsc in PATH (.ci/run installs it)")
		t.Setenv("TMPDIR", t.TempDir())
	}
}

// TestEveryLevel: an environment's contract is the same at every isolation
// level: exit codes and signals, a timeout that kills the command's whole tree
// and no other command, output caps with the whole stream kept, files written
// from either side, the diff, the workspace and memory limits, pause and resume,
// and nothing left after Destroy.
func TestEveryLevel(t *testing.T) {
	for _, level := range levels {
		t.Run(string(level), func(t *testing.T) {
			requireLevel(t, level)
			m := newManager(t, Config{})
			ctx := context.Background()
			ws := fixture(t)
			filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 1000, 1000) })
			info := create(t, m, CreateOptions{Workspace: ws, Isolation: level, Limits: Limits{WorkspaceSize: 16 << 20}})
			if info.Isolation != level {
				t.Fatalf("Info.Isolation %q", info.Isolation)
			}
			if got, _ := m.Get(ctx, alice, info.ID); got.Isolation != level {
				t.Fatalf("Get: isolation %q", got.Isolation)
			}
			id := info.ID
			if out := sh(t, m, id, "cat README.md; id -u; pwd"); out != "hello\n1000\n/workspace\n" {
				t.Fatalf("exec: %q", out)
			}
			for _, tc := range []struct {
				script string
				code   int
				signal string
			}{{"exit 7", 7, ""}, {"kill -TERM $$", 143, "SIGTERM"}, {"no-such-command", 127, ""}} {
				res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", tc.script}})
				if err != nil || res.ExitCode != tc.code || (tc.signal != "") != (res.Signal != nil) || res.Signal != nil && *res.Signal != tc.signal {
					t.Errorf("%q: %+v, %v", tc.script, res, err)
				}
			}
			if res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"no-such-binary"}}); err != nil || res.ExitCode != 127 {
				t.Errorf("a missing binary: %+v, %v", res, err)
			}

			// Commands run at once, each with its own result.
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Go(func() {
					res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "sleep 0.2; echo $0; exit $0", strconv.Itoa(i)}})
					if err != nil || res.ExitCode != i || res.Stdout != strconv.Itoa(i)+"\n" {
						t.Errorf("concurrent command %d: %+v, %v", i, res, err)
					}
				})
			}
			wg.Wait()

			// A timeout ends the command's tree, daemons included, not another command.
			if res := timeoutKillsOnlyItsTree(t, m, id, "TERM"); res.Isolation != level {
				t.Errorf("the timed-out command ran at %q, want %q", res.Isolation, level)
			}

			// Output caps keep the whole stream as an artifact; usage is counted.
			res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "seq 1 50000; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"}, OutputLimit: 1000})
			if err != nil || !res.StdoutTruncated || res.StdoutRef == "" || res.CPUUserMS+res.CPUSysMS == 0 {
				t.Fatalf("output cap: %+v, %v", res, err)
			}
			if b, _, err := m.ReadArtifact(ctx, alice, res.StdoutRef, 0, 0); err != nil || !strings.HasSuffix(string(b), "\n50000\n") {
				t.Errorf("the stored stdout ends %q, %v", b[max(0, len(b)-20):], err)
			}

			// Files from either side, and the diff.
			if err := m.WriteFile(ctx, alice, id, "new/file.txt", []byte("from the API\n")); err != nil {
				t.Fatal(err)
			}
			if out := sh(t, m, id, "cat new/file.txt; stat -c '%u' new/file.txt; echo inside > made.txt; rm data.bin"); out != "from the API\n1000\n" {
				t.Errorf("the sandbox sees %q", out)
			}
			if b, err := m.ReadFile(ctx, alice, id, "made.txt", 0, 0); err != nil || string(b) != "inside\n" {
				t.Errorf("ReadFile = %q, %v", b, err)
			}
			diff, err := m.Diff(ctx, alice, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"+++ b/made.txt", "+++ b/new/file.txt", "deleted file", "a/data.bin"} {
				if !strings.Contains(string(diff), want) {
					t.Errorf("diff lacks %q:\n%s", want, diff)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "README.md")); string(b) != "hello\n" {
				t.Errorf("the host workspace changed: %q", b)
			}
			// The workspace's changes are bounded.
			if res, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "head -c 33554432 /dev/zero > big"}}); err != nil || res.ExitCode == 0 {
				t.Errorf("32 MiB in a 16 MiB workspace: %+v, %v", res, err)
			}

			// Pause and resume.
			p, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sh", "-c", "sleep 0.5; echo resumed"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Pause(ctx, alice, id, PauseOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrPaused) {
				t.Errorf("Exec while paused = %v", err)
			}
			if _, err := m.Resume(ctx, alice, id); err != nil {
				t.Fatal(err)
			}
			if res, err := m.Wait(ctx, alice, id, p); err != nil || res.Stdout != "resumed\n" {
				t.Errorf("after resume: %+v, %v", res, err)
			}

			// The memory limit: the command is OOM-killed, the environment goes on.
			small := create(t, m, CreateOptions{Isolation: level, Limits: Limits{Memory: 256 << 20}}).ID
			res, err = m.Exec(ctx, alice, small, ExecRequest{Argv: []string{"python3", "-c", "a = []\nwhile True: a.append(bytearray(16 << 20))"}})
			if err != nil || !res.OOMKilled || res.Limit != runner.LimitMemory {
				t.Errorf("a balloon in 256 MiB: %+v, %v", res, err)
			}
			sh(t, m, small, "true")

			if level == runner.IsolationGvisor {
				if _, err := m.Snapshot(ctx, alice, id); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "namespace") {
					t.Errorf("Snapshot of a gvisor environment = %v, want ErrInvalid naming the namespace level", err)
				}
				sh(t, m, id, "true") // and it goes on
			}

			f := footprintOf(envOf(t, m, id))
			if err := m.Destroy(ctx, alice, id); err != nil {
				t.Fatal(err)
			}
			f.check(t)
		})
	}
}

// TestEveryLevelMounts: a read-only mount cannot be written, a copy-on-write one
// takes writes that never reach the host, at every level.
func TestEveryLevelMounts(t *testing.T) {
	for _, level := range levels {
		t.Run(string(level), func(t *testing.T) {
			requireLevel(t, level)
			m := newManager(t, Config{})
			ro, cow := t.TempDir(), t.TempDir()
			os.WriteFile(filepath.Join(ro, "r.txt"), []byte("ro\n"), 0o644)
			os.WriteFile(filepath.Join(cow, "c.txt"), []byte("cow\n"), 0o644)
			// The owner is uid 1000 inside at both levels: the namespace level maps
			// the owner to it, the gvisor level shows host owners as they are.
			for _, d := range []string{ro, cow} {
				filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 1000, 1000) })
			}
			id := create(t, m, CreateOptions{Isolation: level, Mounts: []Mount{
				{Source: ro, Target: "/opt/ro"}, {Source: cow, Target: "/opt/cow", Mode: MountCopyOnWrite}}}).ID
			out := sh(t, m, id, "cat /opt/ro/r.txt /opt/cow/c.txt; echo x > /opt/ro/new 2>/dev/null || echo ro-refused; "+
				"echo changed > /opt/cow/c.txt; echo new > /opt/cow/new; cat /opt/cow/c.txt /opt/cow/new")
			if out != "ro\ncow\nro-refused\nchanged\nnew\n" {
				t.Errorf("inside: %q", out)
			}
			if b, _ := os.ReadFile(filepath.Join(cow, "c.txt")); string(b) != "cow\n" {
				t.Errorf("the copy-on-write mount's host file changed: %q", b)
			}
			for _, p := range []string{filepath.Join(ro, "new"), filepath.Join(cow, "new")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s reached the host", p)
				}
			}
			// A source reached through a symlink is refused: it could be swapped.
			link := filepath.Join(t.TempDir(), "link")
			os.Symlink(ro, link)
			if _, err := m.Create(context.Background(), CreateOptions{Owner: alice, Isolation: level, Mounts: []Mount{{Source: link, Target: "/opt/l"}}}); err == nil {
				t.Error("a mount whose source is a symlink was made")
			}
		})
	}
}

// A gvisor environment refuses what only the namespace level has, by name.
func TestGvisorCreateInvalid(t *testing.T) {
	m := newManager(t, Config{})
	for _, o := range []CreateOptions{
		{Isolation: runner.IsolationGvisor, Network: &Network{}},
		{Isolation: runner.IsolationGvisor, Mounts: []Mount{{Source: t.TempDir(), Target: "/opt/x", Mode: MountReadWrite}}},
		{Isolation: runner.IsolationGvisor, Template: "python"},
		{Isolation: runner.IsolationProcess},
		{Isolation: "vm"},
	} {
		o.Owner = alice
		if _, err := m.Create(context.Background(), o); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "isolation") {
			t.Errorf("Create(%+v) = %v, want ErrInvalid naming the isolation", o, err)
		}
	}
}
