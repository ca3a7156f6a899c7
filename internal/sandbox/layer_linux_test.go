package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestSealLayer: a sealed upper layer is the read-only base of sandboxes
// started on it. Each sees the layer and its own writes only; what one
// changes, deletes or tries to reach of the layer (an attacker in a fork)
// changes neither the layer on the host nor a sibling.
func TestSealLayer(t *testing.T) {
	testenv.RequireRoot(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "base"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := Start(Config{Persistent: true, Workspace: ws}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	if out, ex := shIn(t, src, "echo snap > /workspace/snap && rm /workspace/base && mkdir /workspace/d && echo in > /workspace/d/f"); ex.ExitCode != 0 {
		t.Fatalf("write in source: %v %s", ex, out)
	}
	// A command still running when the sandbox is sealed is killed before the
	// layer is taken: it never writes the layer.
	bg, err := execIn(t, src, ExecConfig{Argv: []string{"/bin/sh", "-c", "while :; do echo x >> /workspace/late; done"}})
	if err != nil {
		t.Fatal(err)
	}
	layer, err := src.Seal()
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	bg.stdin.Close()
	bg.p.Wait()
	bg.wg.Wait()
	defer layer.Close()
	if _, err := src.Destroy(); err != ErrDone {
		t.Errorf("Destroy after Seal = %v, want ErrDone", err)
	}
	late, _ := os.ReadFile(filepath.Join(layer.Dir(), "late"))
	defer func() {
		if now, _ := os.ReadFile(filepath.Join(layer.Dir(), "late")); string(now) != string(late) {
			t.Errorf("the killed command's file changed after the seal: %d bytes, then %d", len(late), len(now))
		}
	}()
	if err := os.WriteFile(filepath.Join(layer.Dir(), "host"), nil, 0o644); err == nil {
		t.Errorf("the layer is writable on the host")
	}

	forks := []*Sandbox{startPersistent(t, Config{Workspace: ws, Layers: []*Layer{layer}})}
	// The second is sealed below, not destroyed by the cleanup.
	sb, err := Start(Config{Persistent: true, Workspace: ws, Layers: []*Layer{layer}}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	forks = append(forks, sb)
	script := []string{
		// Attacker: rewrite, delete and add to what the layer holds.
		"echo A > /workspace/snap && rm -r /workspace/d && echo a > /workspace/a",
		"echo b > /workspace/b",
	}
	for i, sb := range forks {
		if out, ex := shIn(t, sb, script[i]); ex.ExitCode != 0 {
			t.Fatalf("fork %d: %v %s", i, ex, out)
		}
	}
	list := "cd /workspace && for f in $(find . -type f ! -name late | sort); do echo \"$f=$(cat $f)\"; done"
	want := []string{"./a=a\n./snap=A\n", "./b=b\n./d/f=in\n./snap=snap\n"}
	for i, sb := range forks {
		out, ex := shIn(t, sb, list)
		if ex.ExitCode != 0 || out != want[i] {
			t.Errorf("fork %d sees %q (exit %v), want %q", i, out, ex, want[i])
		}
	}
	// The layer on the host is what the source left.
	for name, want := range map[string]string{"snap": "snap\n", "d/f": "in\n"} {
		if b, err := os.ReadFile(filepath.Join(layer.Dir(), name)); err != nil || string(b) != want {
			t.Errorf("layer %s = %q, %v; want %q", name, b, err, want)
		}
	}
	for _, name := range []string{"a", "b"} {
		if _, err := os.Lstat(filepath.Join(layer.Dir(), name)); err == nil {
			t.Errorf("a fork's %s reached the layer", name)
		}
	}
	// A fork can stack on a fork's layer: the chain is the layers top first.
	top, err := forks[1].Seal()
	if err != nil {
		t.Fatal(err)
	}
	defer top.Close()
	sb = startPersistent(t, Config{Workspace: ws, Layers: []*Layer{top, layer}})
	if out, _ := shIn(t, sb, list); out != want[1] {
		t.Errorf("on two layers: %q, want %q", out, want[1])
	}
}

// TestSealImageRoot: on an image, the root's upper layer is sealed with the
// workspace's: a sandbox on the layer sees what the sealed one wrote to the
// root (on a host base, in a host directory's overlay too) and its own
// changes stay its own.
func TestSealImageRoot(t *testing.T) {
	testenv.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds an image")
	}
	store, err := image.OpenStore(t.TempDir(), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := image.ParseSpec([]byte("base: {host: true}\nsteps:\n  - run: mkdir -p /opt/tool\n"))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := store.Build(t.Context(), spec, image.BuildOptions{Name: "sealroot", Dir: t.TempDir(), Runner: &BuildRunner{Output: &log}, Log: &log}); err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	im, err := store.Open("sealroot")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	ws := t.TempDir()
	src, err := Start(Config{Persistent: true, Workspace: ws, Image: im}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	if out, ex := shIn(t, src, "echo opt > /opt/tool/f && mkdir -p /usr/local/sealed && echo usr > /usr/local/sealed/f && echo ws > /workspace/w"); ex.ExitCode != 0 {
		t.Fatalf("write in source: %v %s", ex, out)
	}
	layer, err := src.Seal()
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	defer layer.Close()
	a := startPersistent(t, Config{Workspace: ws, Image: im, Layers: []*Layer{layer}})
	b := startPersistent(t, Config{Workspace: ws, Image: im, Layers: []*Layer{layer}})
	if out, ex := shIn(t, a, "echo A > /opt/tool/f && rm -r /usr/local/sealed && echo a > /opt/tool/a"); ex.ExitCode != 0 {
		t.Fatalf("write in a: %v %s", ex, out)
	}
	list := "cat /opt/tool/f /usr/local/sealed/f /workspace/w; ls /opt/tool"
	if out, _ := shIn(t, b, list); out != "opt\nusr\nws\nf\n" {
		t.Errorf("b sees %q, want the sealed root and workspace only", out)
	}
	if out, _ := shIn(t, a, "cat /opt/tool/f /workspace/w; ls /opt/tool; test -e /usr/local/sealed || echo gone"); out != "A\nws\na\nf\ngone\n" {
		t.Errorf("a sees %q, want its own changes over the layer", out)
	}
}
