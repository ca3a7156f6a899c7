package env

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/workspace"
)

// TestLifecycle walks one environment through an agent's session: create from a
// workspace, exec, file operations, patch, str_replace, diff, export, destroy.
// The host workspace never changes; files the API creates belong to the sandbox
// user; destroy is idempotent and leaves nothing (newManager's cleanup checks).
func TestLifecycle(t *testing.T) {
	m := newManager(t, Config{})
	ws := fixture(t)
	ctx := context.Background()
	info := create(t, m, CreateOptions{Workspace: ws, Labels: map[string]string{"run": "1"}})
	if info.State != StateRunning || info.Owner != alice || info.Limits.WorkspaceSize == 0 || !strings.HasPrefix(info.ID, "env-") {
		t.Fatalf("Info %+v", info)
	}
	id := info.ID

	if out := sh(t, m, id, "cat README.md; id -u; pwd"); out != "hello\n1000\n/workspace\n" {
		t.Fatalf("exec: %q", out)
	}

	// Files.
	if err := m.WriteFile(ctx, alice, id, "new/dir/file.txt", []byte("from the API\n")); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, m, id, "cat new/dir/file.txt; stat -c '%u:%g %a' new/dir/file.txt new/dir"); out != "from the API\n1000:1000 644\n1000:1000 755\n" {
		t.Fatalf("the sandbox sees %q", out)
	}
	sh(t, m, id, "echo from the sandbox > made.txt")
	if b, err := m.ReadFile(ctx, alice, id, "made.txt", 0, 0); err != nil || string(b) != "from the sandbox\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if b, err := m.ReadFile(ctx, alice, id, "made.txt", 5, 3); err != nil || string(b) != "the" {
		t.Fatalf("ReadFile range = %q, %v", b, err)
	}
	if st, err := m.Stat(ctx, alice, id, "src"); err != nil || !st.Mode.IsDir() {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
	ents, err := m.ListDir(ctx, alice, id, ".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, " "); got != "README.md data.bin made.txt new src" {
		t.Fatalf("ListDir: %s", got)
	}
	if err := m.Mkdir(ctx, alice, id, "a/b/c"); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, alice, id, "a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, alice, id, "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove missing = %v", err)
	}
	if _, err := m.ReadFile(ctx, alice, id, "../../etc/passwd", 0, 0); !errors.Is(err, workspace.ErrEscape) {
		t.Fatalf("ReadFile escaping = %v", err)
	}

	// Edits.
	patch := "--- a/src/main.go\n+++ b/src/main.go\n@@ -2,4 +2,4 @@\n \n func main() {\n-\tprintln(\"old\")\n+\tprintln(\"new\")\n }\n"
	rep, err := m.ApplyPatch(ctx, alice, id, []byte(patch))
	if err != nil || len(rep.Files) != 1 || rep.Files[0].Added != 1 {
		t.Fatalf("ApplyPatch = %+v, %v", rep, err)
	}
	_, err = m.ApplyPatch(ctx, alice, id, []byte(patch))
	var pe *workspace.PatchError
	if !errors.As(err, &pe) || pe.Hunk != 1 {
		t.Fatalf("ApplyPatch twice = %v", err)
	}
	if err := m.StrReplace(ctx, alice, id, "README.md", "hello", "hello, world"); err != nil {
		t.Fatal(err)
	}
	if err := m.StrReplace(ctx, alice, id, "README.md", "absent", "x"); !errors.Is(err, workspace.ErrNoMatch) {
		t.Fatalf("StrReplace no match = %v", err)
	}
	sh(t, m, id, "rm data.bin; printf '\\000\\001new' > blob.bin")

	// Diff: everything since creation.
	diff, err := m.Diff(ctx, alice, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+hello, world", "-\tprintln(\"old\")", "+\tprintln(\"new\")", "new file mode 100644",
		"+++ b/new/dir/file.txt", "+++ b/made.txt", "deleted file mode", "a/data.bin", "Binary files a/blob.bin and b/blob.bin differ"} {
		if !strings.Contains(string(diff), want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}

	// Export and read back, in ranges.
	a, err := m.Export(ctx, alice, id, "made.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Ref, "sha256:") || a.Size != 17 || a.Owner != alice || a.Name != "made.txt" || a.EnvID != id || a.Source != "file:made.txt" {
		t.Fatalf("Artifact %+v", a)
	}
	if b, got, err := m.ReadArtifact(ctx, alice, a.Ref, 5, 3); err != nil || string(b) != "the" || got.Ref != a.Ref {
		t.Fatalf("ReadArtifact = %q %+v %v", b, got, err)
	}
	if _, err := m.Export(ctx, alice, id, "src"); !errors.Is(err, workspace.ErrNotRegular) {
		t.Fatalf("Export a directory = %v", err)
	}

	// Tar out and in.
	var buf bytes.Buffer
	if err := m.Download(ctx, alice, id, "new", &buf); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(buf.Bytes()))
	var tarNames []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		tarNames = append(tarNames, h.Name)
	}
	if got := strings.Join(tarNames, " "); !strings.Contains(got, "dir/file.txt") {
		t.Fatalf("tar holds %s", got)
	}
	if err := m.Upload(ctx, alice, id, "copy", bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, m, id, "cat copy/dir/file.txt"); out != "from the API\n" {
		t.Fatalf("uploaded: %q", out)
	}

	// The host workspace never changed.
	if b, _ := os.ReadFile(filepath.Join(ws, "README.md")); string(b) != "hello\n" {
		t.Fatalf("host README.md: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err == nil {
		t.Fatal("host workspace gained made.txt")
	}

	// Destroy: idempotent; afterwards the owner hears ErrDestroyed.
	if l, _ := m.List(ctx, alice, map[string]string{"run": "1"}); len(l) != 1 {
		t.Fatalf("List = %+v", l)
	}
	f := footprintOf(envOf(t, m, id))
	if err := m.Destroy(ctx, alice, id); err != nil {
		t.Fatal(err)
	}
	f.check(t)
	if err := m.Destroy(ctx, alice, id); err != nil {
		t.Fatalf("second Destroy = %v", err)
	}
	if got, err := m.Get(ctx, alice, id); err != nil || got.State != StateDestroyed {
		t.Fatalf("Get after Destroy = %+v, %v", got, err)
	}
	if _, err := m.Exec(ctx, alice, id, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("Exec after Destroy = %v", err)
	}
	if _, err := m.ReadFile(ctx, alice, id, "made.txt", 0, 0); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("ReadFile after Destroy = %v", err)
	}
	if l, _ := m.List(ctx, alice, nil); len(l) != 0 {
		t.Fatalf("List after Destroy = %+v", l)
	}
	// Artifacts outlive the environment.
	if b, _, err := m.ReadArtifact(ctx, alice, a.Ref, 0, 0); err != nil || string(b) != "from the sandbox\n" {
		t.Fatalf("ReadArtifact after Destroy = %q, %v", b, err)
	}
}

// TestCreateInvalid: bad requests fail with ErrInvalid before anything starts.
func TestCreateInvalid(t *testing.T) {
	m := newManager(t, Config{Presets: map[string]string{"base": t.TempDir()}})
	ws := t.TempDir()
	for name, o := range map[string]CreateOptions{
		"no tenant":                {Workspace: ws},
		"both":                     {Owner: alice, Workspace: ws, Preset: "base"},
		"unknown workspace preset": {Owner: alice, Preset: "nope"},
		"relative":                 {Owner: alice, Workspace: "rel/dir"},
		"missing":                  {Owner: alice, Workspace: "/nonexistent/agentbox"},
		"network":                  {Owner: alice, Network: &Network{Allow: []string{"*.com"}}},
		"memory":                   {Owner: alice, Limits: Limits{Memory: 1000}},
		"negative ttl":             {Owner: alice, TTL: -1},
		"label":                    {Owner: alice, Labels: map[string]string{"": "x"}},
	} {
		if _, err := m.Create(context.Background(), o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Create = %v, want ErrInvalid", name, err)
		}
	}
}

// TestReadCap: a file over MaxReadBytes is a TooLargeError with its size; a range
// of it reads.
func TestReadCap(t *testing.T) {
	m := newManager(t, Config{MaxReadBytes: 1000})
	id := create(t, m, CreateOptions{}).ID
	sh(t, m, id, "head -c 5000 /dev/zero > big")
	_, err := m.ReadFile(context.Background(), alice, id, "big", 0, 0)
	var tle *workspace.TooLargeError
	if !errors.As(err, &tle) || tle.Size != 5000 || tle.Limit != 1000 {
		t.Fatalf("ReadFile big = %v", err)
	}
	if b, err := m.ReadFile(context.Background(), alice, id, "big", 4500, 1000); err != nil || len(b) != 500 {
		t.Fatalf("ReadFile range = %d bytes, %v", len(b), err)
	}
}
