package tool

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/env/envtest"
)

// TestRewind: a live environment is brought back to an earlier diff (a
// write rolled back), and to its start, whatever came after: an edit of the
// same file, a new file, a deleted one; the workspace's version is the earlier
// one's again.
func TestRewind(t *testing.T) {
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "gone.txt"), []byte("here\n"), 0o644))
	ctx := context.Background()
	e, err := OpenEnv(ctx, EnvOptions{Service: envtest.New(t), Owner: env.Owner{Tenant: "test", Task: "rewind"}, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	start := e.Workspace.Snapshot().Version
	wantOK(t, call(t, e.Registry, "fs.write", `{"path":"a.txt","content":"first\n"}`))
	base, err := e.Diff(ctx)
	if err != nil || len(base) == 0 {
		t.Fatalf("diff %q %v", base, err)
	}
	v1 := e.Workspace.Snapshot().Version
	wantOK(t, call(t, e.Registry, "fs.write", `{"path":"a.txt","content":"second\n"}`))
	wantOK(t, call(t, e.Registry, "fs.write", `{"path":"new/b.txt","content":"b\n"}`))
	wantOK(t, call(t, e.Registry, "fs.remove", `{"path":"gone.txt"}`))
	if e.Workspace.Snapshot().Version == v1 {
		t.Fatal("the writes did not change the version")
	}
	if err := e.Rewind(ctx, base); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Diff(ctx); !bytes.Equal(got, base) || e.Workspace.Snapshot().Version != v1 {
		t.Fatalf("after rewinding: version %s (want %s), diff\n%s\nwant\n%s", e.Workspace.Snapshot().Version, v1, got, base)
	}
	if err := e.Rewind(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Diff(ctx); len(bytes.TrimSpace(got)) != 0 || e.Workspace.Snapshot().Version != start {
		t.Fatalf("after rewinding to the start: version %s (want %s), diff\n%s", e.Workspace.Snapshot().Version, start, got)
	}
}

// TestRewindHollowDirectory: a file the session removed, whose path then held
// a directory until its last file went, leaves a directory holding only empty
// ones, which no diff carries: rewinding to before the removal makes the path
// the file again (the directories go), where git apply would refuse
// ("Directory not empty") and the rollback of a stale write would be kept.
func TestRewindHollowDirectory(t *testing.T) {
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "x"), []byte("x\n"), 0o644))
	ctx := context.Background()
	e, err := OpenEnv(ctx, EnvOptions{Service: envtest.New(t), Owner: env.Owner{Tenant: "test", Task: "rewind-hollow"}, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	start := e.Workspace.Snapshot().Version
	wantOK(t, call(t, e.Registry, "fs.remove", `{"path":"x"}`))
	wantOK(t, call(t, e.Registry, "fs.write", `{"path":"x/y/f","content":"f\n"}`))
	wantOK(t, call(t, e.Registry, "fs.remove", `{"path":"x/y/f"}`))
	if l := call(t, e.Registry, "fs.list", `{"path":"x"}`); !l.OK || !bytes.Contains(l.Data, []byte(`"x/y"`)) {
		t.Fatalf("x does not hold the empty directory y: %+v", l)
	}
	if err := e.Rewind(ctx, nil); err != nil {
		t.Fatal(err)
	}
	r := call(t, e.Registry, "fs.read", `{"path":"x"}`)
	if !r.OK || r.Text != "x\n" || e.Workspace.Snapshot().Version != start {
		t.Fatalf("after rewinding: x reads %+v, version %s (want %s)", r, e.Workspace.Snapshot().Version, start)
	}
}
