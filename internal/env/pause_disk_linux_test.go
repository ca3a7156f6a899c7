package env

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
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

// TestDiskLayerSnapshot: an environment on a disk layer snapshots and forks as
// one on a memory layer does (the sealed ext4 layer mounted idmapped below
// each fork's own disk layer), its snapshot's Bytes counts what was written,
// and a fork pauses to disk.
func TestDiskLayerSnapshot(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	id := create(t, m, CreateOptions{Layer: LayerDisk, Limits: Limits{WorkspaceSize: 64 << 20}}).ID
	sh(t, m, id, "head -c 4194304 /dev/zero > base && echo source > who")
	s, err := m.Snapshot(ctx, alice, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Bytes < 4<<20 || s.Bytes > 5<<20 {
		t.Errorf("the snapshot of 4 MiB written on a disk layer holds %d bytes", s.Bytes)
	}
	forks, err := m.Fork(ctx, alice, id, ForkOptions{Count: 2, Snapshot: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range forks {
		if f.Layer != LayerDisk {
			t.Errorf("fork %d: layer %q", i, f.Layer)
		}
		if out := sh(t, m, f.ID, "cat who; echo fork"+string(rune('0'+i))+" > who; wc -c < base"); out != "source\n4194304\n" {
			t.Errorf("fork %d saw %q", i, out)
		}
	}
	if p, err := m.Pause(ctx, alice, forks[0].ID, PauseOptions{ToDisk: true}); err != nil || !p.PausedToDisk {
		t.Fatalf("Pause to disk of a fork = %+v, %v", p, err)
	}
	if _, err := m.Resume(ctx, alice, forks[0].ID); err != nil {
		t.Fatal(err)
	}
	for i, f := range forks {
		if out := sh(t, m, f.ID, "cat who"); out != "fork"+string(rune('0'+i))+"\n" {
			t.Errorf("fork %d's own write reads %q", i, out)
		}
	}
}

// TestDiskLayerTemplate: on a template, a disk-layer environment's root upper
// layer is a disk layer too: a write to the root outlives a pause to disk and
// carries into a snapshot's fork.
func TestDiskLayerTemplate(t *testing.T) {
	testenv.RequireRoot(t) // the image store needs root
	store, err := image.OpenStore(filepath.Join(t.TempDir(), "images"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := image.ParseSpec([]byte("base: {host: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Build(context.Background(), spec, image.BuildOptions{Name: "host"}); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Config{Images: store, ReapInterval: time.Hour})
	ctx := context.Background()
	id := create(t, m, CreateOptions{Template: "host", Layer: LayerDisk, Limits: Limits{WorkspaceSize: 64 << 20}}).ID
	var st unix.Statfs_t
	root := filepath.Join(filepath.Dir(envOf(t, m, id).ns().UpperDir()), "root")
	if err := unix.Statfs(root, &st); err != nil || st.Type != unix.EXT4_SUPER_MAGIC {
		t.Fatalf("the root's upper layer %s is on fs type %#x (%v), want ext4", root, st.Type, err)
	}
	sh(t, m, id, "echo root-write > /var/tmp/agentbox-disk-layer-x")
	if _, err := m.Pause(ctx, alice, id, PauseOptions{ToDisk: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Resume(ctx, alice, id); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, m, id, "cat /var/tmp/agentbox-disk-layer-x"); out != "root-write\n" {
		t.Errorf("after a pause to disk the root write reads %q", out)
	}
	forks, err := m.Fork(ctx, alice, id, ForkOptions{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if out := sh(t, m, forks[0].ID, "cat /var/tmp/agentbox-disk-layer-x"); out != "root-write\n" {
		t.Errorf("the fork's root reads %q", out)
	}
}
