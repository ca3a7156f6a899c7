package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/task"
)

// calcWorkspace lays out the calc task's repository in a host directory with a
// few extra files, and a secret next to it (outside the workspace). It returns the
// workspace directory and the secret's path.
func calcWorkspace(t *testing.T) (ws, secret string) {
	t.Helper()
	dir := t.TempDir()
	tasks, err := task.Builtin(filepath.Join(dir, "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	var calc *task.Task
	for _, tk := range tasks {
		if tk.ID == "calc" {
			calc = tk
		}
	}
	ws = filepath.Join(dir, "ws")
	if err := os.CopyFS(ws, os.DirFS(calc.Repo)); err != nil {
		t.Fatal(err)
	}
	secret = filepath.Join(dir, "secret.txt")
	must(t, os.WriteFile(secret, []byte("TOP-SECRET-HOST-CONTENT\n"), 0o600))
	var big bytes.Buffer
	for i := 0; big.Len() < 100<<10; i++ {
		big.WriteString(strings.Repeat("x", 60) + " line " + itoa(i) + "\n")
	}
	must(t, os.WriteFile(filepath.Join(ws, "big.txt"), big.Bytes(), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "blob.bin"), []byte{0x7f, 'E', 'L', 'F', 0, 0, 1, 2}, 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, "pkg", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "pkg", "deep", "notes.txt"), []byte("return a - b is wrong\n"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(ws, "link-out")))
	must(t, os.Symlink("big.txt", filepath.Join(ws, "link-big")))
	return ws, secret
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// builtins opens an environment on ws and registers the built-in tools.
func builtins(t *testing.T, ws string, o BuiltinOptions) (*Registry, *Workspace, env.Service, string) {
	t.Helper()
	svc := envtest.New(t)
	owner := env.Owner{Tenant: "test", Task: "calc"}
	ctx := context.Background()
	info, err := svc.Create(ctx, env.CreateOptions{Owner: owner, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Destroy(context.Background(), owner, info.ID) })
	o.Service, o.Owner, o.EnvID = svc, owner, info.ID
	if o.TestCommand == nil {
		o.TestCommand = []string{"python3", "-B", "-m", "unittest", "-v"}
	}
	r := NewRegistry(Options{Scopes: BuiltinScopes})
	w, err := RegisterBuiltins(ctx, r, o)
	if err != nil {
		t.Fatal(err)
	}
	return r, w, svc, info.ID
}

func call(t *testing.T, r *Registry, name, args string) Envelope {
	t.Helper()
	out := r.Call(context.Background(), Call{Tool: name, Args: json.RawMessage(args)}, nil)
	if out.Internal != "" {
		t.Logf("%s %s: internal error: %s", name, args, out.Internal)
	}
	return out.Envelope
}

func wantOK(t *testing.T, e Envelope) {
	t.Helper()
	if !e.OK {
		t.Fatalf("failed: %+v", e.Error)
	}
}

func wantCode(t *testing.T, e Envelope, c Code) {
	t.Helper()
	if e.OK || e.Error == nil || e.Error.Code != c {
		t.Fatalf("got %+v (error %+v), want %s", e, e.Error, c)
	}
}

func field[T any](t *testing.T, e Envelope) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReadTools(t *testing.T) {
	ws, secret := calcWorkspace(t)
	r, _, _, _ := builtins(t, ws, BuiltinOptions{MaxOutput: 4096})
	calc, _ := os.ReadFile(filepath.Join(ws, "calc.py"))
	big, _ := os.ReadFile(filepath.Join(ws, "big.txt"))

	t.Run("whole file", func(t *testing.T) {
		e := call(t, r, "fs.read", `{"path":"calc.py"}`)
		wantOK(t, e)
		if e.Text != string(calc) || e.Truncated || e.Source != "calc.py" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("lines", func(t *testing.T) {
		e := call(t, r, "fs.read", `{"path":"calc.py","start_line":4,"end_line":6}`)
		wantOK(t, e)
		if e.Text != "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a - b\n" {
			t.Fatalf("%q", e.Text)
		}
		if d := field[readOut](t, e); d.TotalLines != 11 || d.EndLine != 6 {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("large file: head, tail and a ref", func(t *testing.T) {
		e := call(t, r, "fs.read", `{"path":"big.txt"}`)
		wantOK(t, e)
		d := field[readOut](t, e)
		if !e.Truncated || !d.Truncated || d.Size != int64(len(big)) || d.Omitted != int64(len(big)-d.Bytes) || len(e.Text) > 4096+200 {
			t.Fatalf("%+v, %d bytes of text", d, len(e.Text))
		}
		i := strings.Index(e.Text, "\n[… ")
		if i < 0 || !bytes.HasPrefix(big, []byte(e.Text[:i])) {
			t.Fatal("the head is not the file's")
		}
		if !bytes.HasSuffix(big, []byte(e.Text[strings.Index(e.Text, " …]\n")+len(" …]\n"):])) {
			t.Fatal("the tail is not the file's")
		}
		if len(e.Refs) != 1 || e.Refs[0].Store != "environment" || e.Refs[0].Size != int64(len(big)) {
			t.Fatalf("refs %+v", e.Refs)
		}
		// The ref fetches any range of the whole file.
		a := call(t, r, "artifact.read", `{"ref":"`+e.Refs[0].Ref+`","offset":50000,"length":100}`)
		wantOK(t, a)
		if a.Text != string(big[50000:50100]) {
			t.Fatalf("artifact range %q", a.Text)
		}
	})
	t.Run("symlink to a large file", func(t *testing.T) {
		e := call(t, r, "fs.read", `{"path":"link-big"}`)
		wantOK(t, e)
		if d := field[readOut](t, e); !d.Truncated || d.Size != int64(len(big)) || len(e.Text) > 4096+200 {
			t.Fatalf("%+v, %d bytes of text", d, len(e.Text))
		}
	})
	t.Run("range cut at the cap", func(t *testing.T) {
		e := call(t, r, "fs.read", `{"path":"big.txt","offset":10,"length":100000}`)
		wantOK(t, e)
		d := field[readOut](t, e)
		if e.Text != string(big[10:10+4096]) || d.NextOffset != 10+4096 || !d.Truncated {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("binary", func(t *testing.T) {
		e := call(t, r, "fs.read", `{"path":"blob.bin"}`)
		wantOK(t, e)
		if d := field[readOut](t, e); !d.Binary || e.Text != "" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			tool, args string
			code       Code
		}{
			{"fs.read", `{"path":"../secret.txt"}`, EPERM},
			{"fs.read", `{"path":"/etc/passwd"}`, EPERM},
			{"fs.read", `{"path":"link-out"}`, EPERM},
			{"fs.read", `{"path":"pkg/../../secret.txt"}`, EPERM},
			{"fs.read", `{"path":"missing.py"}`, ENOENT},
			{"fs.read", `{"path":"pkg"}`, EINVAL},
			{"fs.read", `{"path":"calc.py","offset":-1}`, EINVAL},
			{"fs.read", `{"path":"calc.py","offset":1,"start_line":2}`, EINVAL},
			{"fs.list", `{"path":".."}`, EPERM},
			{"fs.list", `{"path":"nope"}`, ENOENT},
			{"fs.search", `{"pattern":"(unclosed"}`, EINVAL},
			{"fs.search", `{"pattern":"x","path":"../"}`, EPERM},
			{"artifact.read", `{"ref":"sha256:` + strings.Repeat("0", 64) + `"}`, ENOENT},
			{"artifact.read", `{"ref":"sha256:0000"}`, EINVAL},
		} {
			e := call(t, r, tc.tool, tc.args)
			wantCode(t, e, tc.code)
			if b, _ := json.Marshal(e); bytes.Contains(b, []byte("TOP-SECRET")) || bytes.Contains(b, []byte(filepath.Dir(ws))) {
				t.Fatalf("%s %s leaked host content or a host path: %s", tc.tool, tc.args, b)
			}
		}
		if b, _ := os.ReadFile(secret); string(b) != "TOP-SECRET-HOST-CONTENT\n" {
			t.Fatal("the host secret changed")
		}
	})
	t.Run("list", func(t *testing.T) {
		e := call(t, r, "fs.list", `{"depth":3}`)
		wantOK(t, e)
		got := map[string]string{}
		for _, en := range field[listOut](t, e).Entries {
			got[en.Path] = en.Type
		}
		if got["calc.py"] != "file" || got["tests"] != "dir" || got["tests/test_calc.py"] != "file" ||
			got["pkg/deep/notes.txt"] != "file" || got["link-out"] != "symlink" || got["link-big"] != "symlink" {
			t.Fatalf("%v", got)
		}
		if d := field[listOut](t, call(t, r, "fs.list", `{}`)); len(d.Entries) != 7 {
			t.Fatalf("depth 1: %+v", d.Entries)
		}
	})
	t.Run("search", func(t *testing.T) {
		e := call(t, r, "fs.search", `{"pattern":"return a - b"}`)
		wantOK(t, e)
		want := "calc.py:6:     return a - b\ncalc.py:11:     return a - b\npkg/deep/notes.txt:1: return a - b is wrong\n"
		if e.Text != want {
			t.Fatalf("%q", e.Text)
		}
		d := field[searchOut](t, e)
		if d.Matches != 3 || d.FilesSkipped != 1 || d.Truncated { // blob.bin skipped; link-out is not followed
			t.Fatalf("%+v", d)
		}
		e = call(t, r, "fs.search", `{"pattern":"RETURN A","ignore_case":true,"glob":"*.txt","max_results":1}`)
		wantOK(t, e)
		if e.Text != "pkg/deep/notes.txt:1: return a - b is wrong\n" {
			t.Fatalf("%q", e.Text)
		}
	})
}

// TestSearchSkipsSensitive: a tree search is a project read, so it skips
// sensitive files: grepping the workspace for a password must not read .env or a
// key past the sensitive:read capability (it did before). Searching the file
// itself is a sensitive read, which the gate decides.
func TestSearchSkipsSensitive(t *testing.T) {
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, ".env"), []byte("DB_PASSWORD=Zk3xP9qLm2Vw8Rt5\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, "pkg"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "pkg", "id_rsa"), []byte("DB_PASSWORD in a key file\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "app.py"), []byte("password = os.environ['DB_PASSWORD']\n"), 0o644))
	r, _, _, _ := builtins(t, ws, BuiltinOptions{})
	e := call(t, r, "fs.search", `{"pattern":"DB_PASSWORD"}`)
	wantOK(t, e)
	if e.Text != "app.py:1: password = os.environ['DB_PASSWORD']\n" || field[searchOut](t, e).FilesSkipped != 2 {
		t.Fatalf("%q %+v", e.Text, field[searchOut](t, e))
	}
	if e := call(t, r, "fs.search", `{"pattern":"DB_PASSWORD","path":".env"}`); !strings.Contains(e.Text, "Zk3x") {
		t.Fatalf("a search of the file itself (judged by the gate as a sensitive read): %q", e.Text)
	}
}

func TestEditAndFinish(t *testing.T) {
	ws, _ := calcWorkspace(t)
	r, w, svc, id := builtins(t, ws, BuiltinOptions{})
	ctx := context.Background()
	v0 := w.Snapshot().Version

	wantCode(t, call(t, r, "task.finish", `{}`), EPRECONDITION)
	e := call(t, r, "patch.apply", `{"path":"calc.py","old":"return a - b","new":"return a + b"}`)
	wantCode(t, e, EAMBIGUOUS)
	if !strings.Contains(e.Error.Message, "2 times") {
		t.Fatalf("the count is missing: %q", e.Error.Message)
	}
	wantCode(t, call(t, r, "patch.apply", `{"path":"calc.py","old":"return a * b","new":"x"}`), ENOMATCH)
	wantCode(t, call(t, r, "patch.apply", `{"path":"calc.py","old":"x","new":"y","patch":"--- a"}`), EINVAL)
	wantCode(t, call(t, r, "patch.apply", `{"patch":"not a diff"}`), EINVAL)
	if w.Snapshot().Version != v0 || w.Snapshot().Writes != 0 {
		t.Fatalf("failed edits changed the version: %+v", w.Snapshot())
	}

	t.Run("failing tests", func(t *testing.T) {
		e := call(t, r, "test.run", `{}`)
		wantOK(t, e)
		d := field[testOut](t, e)
		if d.Passed || d.ExitCode == 0 || !strings.Contains(d.Summary, "FAILED") || !strings.Contains(e.Text, "test_add") {
			t.Fatalf("%+v\n%s", d, e.Text)
		}
		wantCode(t, call(t, r, "task.finish", `{}`), EPRECONDITION)
	})

	stale := "--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,1 @@\n-nothing like this\n+x\n"
	e = call(t, r, "patch.apply", mustJSON(map[string]string{"patch": stale}))
	wantCode(t, e, ENOMATCH)
	if !strings.Contains(e.Error.Message, "hunk #1") {
		t.Fatalf("the failing hunk is not named: %q", e.Error.Message)
	}
	fix := "--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,3 @@\n def add(a, b):\n     \"\"\"Return the sum of a and b.\"\"\"\n-    return a - b\n+    return a + b\n"
	e = call(t, r, "patch.apply", mustJSON(map[string]string{"patch": fix}))
	wantOK(t, e)
	if d := field[patchOut](t, e); d.Mode != "patch" || len(d.Files) != 1 || d.Files[0].Added != 1 || d.Files[0].Deleted != 1 {
		t.Fatalf("%+v", d)
	}
	v1 := w.Snapshot().Version
	if v1 == v0 {
		t.Fatal("an applied patch left the version unchanged")
	}
	wantCode(t, call(t, r, "task.finish", `{}`), EPRECONDITION) // tests ran before the change

	e = call(t, r, "test.run", `{}`)
	wantOK(t, e)
	if d := field[testOut](t, e); !d.Passed || d.ExitCode != 0 {
		t.Fatalf("%+v\n%s", d, e.Text)
	}
	// A write after the passing run makes finishing wait for another run.
	wantOK(t, call(t, r, "fs.write", `{"path":"pkg/new/mod.py","content":"X = 1\n"}`))
	if got, err := svc.ReadFile(ctx, w.o.Owner, id, "pkg/new/mod.py", 0, 0); err != nil || string(got) != "X = 1\n" {
		t.Fatalf("%q %v", got, err)
	}
	e = call(t, r, "task.finish", `{}`)
	wantCode(t, e, EPRECONDITION)
	if !strings.Contains(e.Error.Message, "changed after the last test run") {
		t.Fatalf("%q", e.Error.Message)
	}
	wantOK(t, call(t, r, "test.run", `{}`))
	out := r.Call(ctx, Call{Tool: "task.finish", Args: json.RawMessage(`{"summary":"fixed add"}`)}, nil)
	if !out.Envelope.OK || !out.Done || !w.Snapshot().Finished {
		t.Fatalf("%+v", out)
	}
	diff, err := svc.Diff(ctx, w.o.Owner, id)
	if err != nil || !bytes.Contains(diff, []byte("+    return a + b")) || !bytes.Contains(diff, []byte("pkg/new/mod.py")) {
		t.Fatalf("diff %s %v", diff, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "calc.py")); !bytes.Contains(b, []byte("return a - b\n\n\ndef sub")) {
		t.Fatal("the host workspace (the lower layer) was modified")
	}
}

func TestExecTools(t *testing.T) {
	ws, _ := calcWorkspace(t)
	const planted = "sk-PLANTED-IN-THE-COORDINATOR-0123456789"
	t.Setenv("OPENAI_API_KEY", planted)
	t.Setenv("ANTHROPIC_API_KEY", planted)
	r, w, _, _ := builtins(t, ws, BuiltinOptions{MaxOutput: 2048, Env: []string{"AGENTBOX_SESSION_HINT=visible"}, ExecTimeout: 20 * time.Second})

	t.Run("exit status and streams", func(t *testing.T) {
		e := call(t, r, "exec.run", `{"command":"echo out; echo err >&2; exit 3"}`)
		wantOK(t, e)
		d := field[execOut](t, e)
		if d.ExitCode != 3 || e.Text != "[stdout]\nout\n[stderr]\nerr\n" || !strings.HasPrefix(e.Source, "exec: ") {
			t.Fatalf("%+v %q", d, e.Text)
		}
	})
	t.Run("argv", func(t *testing.T) {
		e := call(t, r, "exec.run", `{"argv":["printf","%s","a b"],"cwd":"pkg"}`)
		wantOK(t, e)
		if e.Text != "[stdout]\na b\n[stderr]\n" {
			t.Fatalf("%q", e.Text)
		}
	})
	t.Run("environment", func(t *testing.T) {
		e := call(t, r, "exec.run", `{"command":"env"}`)
		wantOK(t, e)
		if strings.Contains(e.Text, planted) || !strings.Contains(e.Text, "AGENTBOX_SESSION_HINT=visible") {
			t.Fatalf("sandbox environment:\n%s", e.Text)
		}
	})
	t.Run("large output", func(t *testing.T) {
		e := call(t, r, "exec.run", `{"command":"seq 1 40000"}`)
		wantOK(t, e)
		d := field[execOut](t, e)
		if !e.Truncated || !d.StdoutTruncated || len(e.Refs) != 1 || e.Refs[0].Store != "coordinator" || len(e.Text) > 2048+300 {
			t.Fatalf("%+v refs %+v, %d bytes of text", d, e.Refs, len(e.Text))
		}
		if !strings.Contains(e.Text, "\n40000\n") || !strings.HasPrefix(e.Text, "[stdout]\n1\n2\n") {
			t.Fatal("head or tail missing")
		}
		full := ""
		for off := int64(0); ; {
			a := call(t, r, "artifact.read", mustJSON(map[string]any{"ref": e.Refs[0].Ref, "offset": off}))
			wantOK(t, a)
			full += a.Text
			ad := field[artifactOut](t, a)
			if ad.NextOffset == 0 {
				break
			}
			off = ad.NextOffset
		}
		if full != seq(40000) {
			t.Fatalf("the artifact is not the whole output: %d bytes", len(full))
		}
	})
	t.Run("timeout", func(t *testing.T) {
		e := call(t, r, "exec.run", `{"command":"sleep 30","timeout_seconds":0.5}`)
		wantOK(t, e)
		if d := field[execOut](t, e); !d.TimedOut {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("writes change the version", func(t *testing.T) {
		v := w.Snapshot().Version
		wantOK(t, call(t, r, "exec.run", `{"command":"true"}`))
		if w.Snapshot().Version != v {
			t.Fatal("a command that wrote nothing changed the version")
		}
		wantOK(t, call(t, r, "exec.run", `{"command":"echo new > made.txt"}`))
		if w.Snapshot().Version == v {
			t.Fatal("a command that wrote a file left the version unchanged")
		}
	})
	t.Run("arguments", func(t *testing.T) {
		wantCode(t, call(t, r, "exec.run", `{}`), EINVAL)
		wantCode(t, call(t, r, "exec.run", `{"command":"true","argv":["true"]}`), EINVAL)
		wantCode(t, call(t, r, "exec.run", `{"command":"true","timeout_seconds":-1}`), EINVAL)
	})
}

func seq(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
