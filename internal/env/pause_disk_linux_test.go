package env

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPauseToDisk: an environment on a disk layer holds 48 MiB its command
// wrote to /workspace in RAM, charged to it, until a pause to disk gives at
// least 32 MiB of the charge back. Its command, frozen meanwhile with the file
// open and unlinked (no path reaches it), goes on after Resume and reads the
// same bytes through its descriptor; the file operations work throughout. An
// environment on a memory layer is refused a pause to disk, plainly paused or
// not. Nothing is left on the host after Destroy, the loop device included.
func TestPauseToDisk(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	info := create(t, m, CreateOptions{Layer: LayerDisk, Limits: Limits{WorkspaceSize: 256 << 20, Memory: 512 << 20}})
	if info.Layer != LayerDisk {
		t.Errorf("Info.Layer = %q, want disk", info.Layer)
	}
	id := info.ID
	e := envOf(t, m, id)
	f := footprintOf(e)
	proc, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"/bin/sh", "-c", `
head -c 50331648 /dev/urandom > big && sha256sum < big > sum || exit 1
exec 3< big
rm big
echo ready
while [ ! -e go ]; do sleep 0.05; done
sha256sum <&3 | cmp - sum && echo same`}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := m.Events(ctx, alice, id, proc, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	next := func(want string) {
		t.Helper()
		for !strings.Contains(out.String(), want) {
			select {
			case x := <-ev:
				out.Write(x.Data)
				if x.Kind == EventExit {
					t.Fatalf("the command ended (%+v) before %q: %q", x.Result, want, out.String())
				}
			case <-time.After(time.Minute):
				t.Fatalf("no %q from the command: %q", want, out.String())
			}
		}
	}
	next("ready")
	before, err := e.ns().MemoryUsage()
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.Pause(ctx, alice, id, PauseOptions{ToDisk: true})
	if err != nil {
		t.Fatalf("Pause to disk: %v", err)
	}
	if p.State != StatePaused || !p.PausedToDisk {
		t.Errorf("Info after a pause to disk: state %q, paused_to_disk %v", p.State, p.PausedToDisk)
	}
	after, err := e.ns().MemoryUsage()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("charged: %d MiB before the pause, %d MiB after", before>>20, after>>20)
	if before < 48<<20 || before-after < 32<<20 {
		t.Errorf("the charge went from %d to %d bytes: want the 48 MiB written before and at least 32 MiB back", before, after)
	}
	if b, err := m.ReadFile(ctx, alice, id, "sum", 0, 0); err != nil || len(b) == 0 {
		t.Errorf("ReadFile while paused to disk = %q, %v", b, err)
	}
	if err := m.WriteFile(ctx, alice, id, "go", nil); err != nil {
		t.Fatalf("WriteFile while paused to disk: %v", err)
	}
	r, err := m.Resume(ctx, alice, id)
	if err != nil || r.State != StateRunning || r.PausedToDisk {
		t.Fatalf("Resume = %+v, %v", r, err)
	}
	next("same")

	mem := create(t, m, CreateOptions{})
	if mem.Layer != LayerMemory {
		t.Errorf("Info.Layer of a default environment = %q, want memory", mem.Layer)
	}
	if _, err := m.Pause(ctx, alice, mem.ID, PauseOptions{ToDisk: true}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "layer disk") {
		t.Errorf("Pause to disk of a memory layer = %v, want ErrInvalid naming layer disk", err)
	}
	if got, _ := m.Get(ctx, alice, mem.ID); got.State != StateRunning {
		t.Errorf("a refused pause left the environment %s", got.State)
	}

	for _, o := range []CreateOptions{{Owner: alice, Layer: "ssd"}, {Owner: alice, Layer: LayerDisk, Isolation: "gvisor"}} {
		if _, err := m.Create(ctx, o); !errors.Is(err, ErrInvalid) {
			t.Errorf("Create with layer %q at isolation %q = %v, want ErrInvalid", o.Layer, o.Isolation, err)
		}
	}

	loops := loopsOf(t, f.state)
	if len(loops) == 0 {
		t.Fatalf("no loop device backs the environment's state directory %s", f.state)
	}
	if err := m.Destroy(ctx, alice, id); err != nil {
		t.Fatal(err)
	}
	settle(f.gone)
	f.check(t)
	if !settle(func() bool { return len(loopsOf(t, f.state)) == 0 }) {
		t.Errorf("loop devices %v still back the destroyed environment's layers", loopsOf(t, f.state))
	}
}

// loopsOf lists the loop devices whose backing file lies in dir.
func loopsOf(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, bf := range files {
		b, err := os.ReadFile(bf)
		if err == nil && strings.HasPrefix(string(b), dir+"/") {
			out = append(out, bf)
		}
	}
	return out
}
