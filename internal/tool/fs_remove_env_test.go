package tool

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/policy"
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

// TestRemoveDescribed: the gate sees fs.remove as a write and deletion of its
// path, and of the whole tree below a directory (a symlink to a directory is
// one name: only the link goes), so the built-in policy decides a tree's
// removal as it does a tree's write, not as one file's. Before fs.remove had a
// Describe the gate saw only a tool name.
func TestRemoveDescribed(t *testing.T) {
	ws, _ := calcWorkspace(t)
	r, w, _, _ := builtins(t, ws, BuiltinOptions{})
	wantOK(t, call(t, r, "exec.run", `{"command":"mkdir -p pkg/sub && ln -s pkg dirlink"}`))
	ctx := t.Context()
	for _, tc := range []struct{ path, want string }{
		{"calc.py", "calc.py"},
		{"tests", "tests/**"},
		{"./pkg/", "pkg/**"},
		{"dirlink", "dirlink"},
		{"missing", "missing"},
	} {
		a, err := w.describeRemove(ctx, json.RawMessage(`{"path":"`+tc.path+`"}`))
		if err != nil || !slices.Equal(a.Writes, []string{tc.want}) || a.Deletes != 1 {
			t.Errorf("%s: %+v %v; want writes [%s], deletes 1", tc.path, a, err, tc.want)
		}
	}
	if _, err := w.describeRemove(ctx, json.RawMessage(`{"path":"a","x":1}`)); err == nil {
		t.Error("an unknown field was described")
	}
	for _, s := range w.specs() {
		if s.Describe == nil && s.Effect != EffectRead && s.Effect != EffectControl {
			t.Errorf("%s changes something and does not describe its calls to the gate", s.Name)
		}
	}
	def := policy.Default()
	file, _ := w.describeRemove(ctx, json.RawMessage(`{"path":"calc.py"}`))
	tree, _ := w.describeRemove(ctx, json.RawMessage(`{"path":"tests"}`))
	pc := policy.Context{Sandbox: policy.SandboxNamespace, Overlay: true}
	fv, tv := def.Decide(file, pc), def.Decide(tree, pc)
	if fv.Decision != policy.Allow {
		t.Errorf("removing one file: %s (%s)", fv.Decision, fv.Reason())
	}
	if fv.Needs[0].Risk.Inputs.Scope == tv.Needs[0].Risk.Inputs.Scope {
		t.Errorf("a tree's removal is judged at the scope of one file (%s)", tv.Needs[0].Risk.Inputs.Scope)
	}
}
