package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestLayerRemount (attack: a fork remounts its way to the sealed layer). From
// inside a sandbox on a layer, remounting /workspace (and /) read-write,
// unmounting /workspace to see what is below and mounting over it fail or
// change only the sandbox's own view: the layer on the host keeps its one
// file, and a sibling started after still sees it unchanged.
func TestLayerRemount(t *testing.T) {
	testenv.RequireRoot(t)
	_, err := os.Stat("/bin/mount")
	testenv.Require(t, err == nil, "/bin/mount for the sandbox's attempts")
	ws := t.TempDir()
	src, err := Start(Config{Persistent: true, Workspace: ws}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	if out, ex := shIn(t, src, "echo sealed > /workspace/f"); ex.ExitCode != 0 {
		t.Fatalf("write in source: %v %s", ex, out)
	}
	layer, err := src.Seal()
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	defer layer.Close()
	fork := startPersistent(t, Config{Workspace: ws, Layers: []*Layer{layer}})
	attempts, _ := shIn(t, fork, `cd / 2>&1; exec 2>&1
for m in /workspace /; do mount -o remount,rw "$m"; mount -o remount,rw,bind "$m"; done
for d in $(awk '{print $5}' /proc/self/mountinfo); do echo attacker > "$d/f" ; echo x > "$d/planted"; done
umount -l /workspace && { echo attacker > /workspace/f; echo x > /workspace/planted; }
mount -t tmpfs none /workspace && echo x > /workspace/planted
true`)
	ents, err := os.ReadDir(layer.Dir())
	if err != nil || len(ents) != 1 || ents[0].Name() != "f" {
		t.Errorf("the layer on the host holds %v (%v), want f alone; the attempts:\n%s", ents, err, attempts)
	}
	if b, err := os.ReadFile(filepath.Join(layer.Dir(), "f")); err != nil || string(b) != "sealed\n" {
		t.Errorf("the layer's f = %q, %v; want sealed", b, err)
	}
	sib := startPersistent(t, Config{Workspace: ws, Layers: []*Layer{layer}})
	if out, _ := shIn(t, sib, "cat /workspace/f; ls /workspace"); out != "sealed\nf\n" {
		t.Errorf("a sibling sees %q", out)
	}
}
