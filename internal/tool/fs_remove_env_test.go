package tool

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestRemoveTool: fs.remove takes a file or a directory tree out of the
// workspace (the diff shows it, the version moves), removes a symlink and never
// its target, refuses the root and a path outside the workspace, and says
// ENOENT for a path that is not there.
func TestRemoveTool(t *testing.T) {
	ws, _ := calcWorkspace(t)
	r, w, svc, id := builtins(t, ws, BuiltinOptions{})
	ctx := t.Context()
	v0 := w.Snapshot().Version
	wantOK(t, call(t, r, "fs.remove", `{"path":"calc.py"}`))
	if d := field[removeOut](t, call(t, r, "fs.remove", `{"path":"tests"}`)); d.Path != "tests" || !d.Removed {
		t.Fatalf("%+v", d)
	}
	if _, err := svc.Stat(ctx, w.o.Owner, id, "calc.py"); err == nil {
		t.Fatal("calc.py is still there")
	}
	if ents, err := svc.ListDir(ctx, w.o.Owner, id, "."); err != nil || len(ents) == 0 {
		t.Fatalf("the rest of the workspace: %v %v", ents, err)
	}
	diff, err := svc.Diff(ctx, w.o.Owner, id)
	if err != nil || !bytes.Contains(diff, []byte("deleted file mode")) || !bytes.Contains(diff, []byte("calc.py")) {
		t.Fatalf("diff %s %v", diff, err)
	}
	if w.Snapshot().Version == v0 {
		t.Fatal("a removal left the version unchanged")
	}
	wantCode(t, call(t, r, "fs.remove", `{"path":"calc.py"}`), ENOENT)

	// A symlink goes, its target stays.
	wantOK(t, call(t, r, "exec.run", `{"command":"ln -s /etc/hostname link && echo kept > target && ln -s target inside"}`))
	wantOK(t, call(t, r, "fs.remove", `{"path":"link"}`))
	wantOK(t, call(t, r, "fs.remove", `{"path":"inside"}`))
	e := call(t, r, "exec.run", `{"command":"cat /etc/hostname >/dev/null && cat target && ls"}`)
	wantOK(t, e)
	lines := strings.Split(e.Text, "\n")
	if !slices.Contains(lines, "kept") || slices.Contains(lines, "link") || slices.Contains(lines, "inside") || !slices.Contains(lines, "target") {
		t.Fatalf("after removing the links:\n%s", e.Text)
	}

	for _, p := range []string{"../calc.py", "/etc/hostname", "sub/../../x"} {
		wantCode(t, call(t, r, "fs.remove", `{"path":"`+p+`"}`), EPERM)
	}
	for _, p := range []string{".", ""} {
		if e := call(t, r, "fs.remove", `{"path":"`+p+`"}`); e.OK {
			t.Fatalf("removed the workspace root with path %q", p)
		}
	}
}
