package grade

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/task"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestSWEBenchInDebianTemplate: a SWE-bench-style row whose tests need a library
// that Debian packages and the host lacks (python3-toml) is imported with a
// specs entry mapping its repository to a build spec (Python, pytest and toml
// from Debian's archive), the spec is built once into a template, and the row
// grades in environments on it, offline: the gold patch resolves it, the empty
// patch does not. A second build is fully cached. Slow: it bootstraps Debian
// from its archive (about two minutes on 2 cores).
func TestSWEBenchInDebianTemplate(t *testing.T) {
	if testing.Short() {
		t.Skip("bootstraps Debian from its archive")
	}
	testenv.RequireRoot(t)
	for _, tool := range []string{"git", "mmdebstrap"} {
		_, err := exec.LookPath(tool)
		testenv.Require(t, err == nil, "needs "+tool)
	}
	testenv.Require(t, exec.Command("python3", "-c", "import toml").Run() != nil,
		"the host must not have python3-toml, or the test could not tell the template from the host")
	repos := t.TempDir()
	clone := filepath.Join(repos, "acme__conf")
	git := sweGit(t, clone)
	sweWrite(t, clone, map[string]string{
		"conf.py":            "import toml\n\n\ndef port(text):\n    return toml.loads(text)[\"port\"]\n\n\ndef host(text):\n    return toml.loads(text)[\"server\"][\"host\"]\n",
		"tests/__init__.py":  "",
		"tests/test_host.py": "from conf import host\n\n\ndef test_host():\n    assert host('[server]\\nhost = \"a\"\\n') == \"a\"\n",
	})
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := strings.TrimSpace(git("rev-parse", "HEAD"))
	sweWrite(t, clone, map[string]string{"conf.py": "import toml\n\n\ndef port(text):\n    return int(toml.loads(text)[\"port\"])\n\n\ndef host(text):\n    return toml.loads(text)[\"server\"][\"host\"]\n"})
	git("commit", "-q", "-am", "fix")
	fix := strings.TrimSpace(git("rev-parse", "HEAD"))
	sweWrite(t, clone, map[string]string{
		"tests/test_port.py": "from conf import port\n\n\ndef test_port_string():\n    assert port('port = \"8080\"') == 8080\n\n\ndef test_port_int():\n    assert port('port = 80') == 80\n",
	})
	git("add", "-A")
	git("commit", "-q", "-m", "tests")
	gold := git("diff", base, fix)
	row, _ := json.Marshal(map[string]any{
		"instance_id": "acme__conf-1", "repo": "acme/conf", "base_commit": base, "version": "1.0",
		"problem_statement": "port('port = \"8080\"') returns the string; make conf.port return an int.\n",
		"patch":             gold, "test_patch": git("diff", fix, "HEAD", "--", "tests"),
		"FAIL_TO_PASS": `["tests/test_port.py::test_port_string"]`,
		"PASS_TO_PASS": `["tests/test_port.py::test_port_int"]`,
	})
	epoch := 1700000000
	spec := map[string]any{
		"base": map[string]any{"debian": map[string]any{"suite": "bookworm", "include": []string{"python3", "python3-pytest", "python3-toml"}, "source_date_epoch": epoch}},
		"env":  map[string]any{"PYTHONDONTWRITEBYTECODE": "1"},
	}
	specs := task.Specs{"acme/conf": {"1.0": {Framework: task.Pytest, Environment: spec}}}
	done, err := task.ImportSWEBench(t.Context(), bytes.NewReader(row), task.ImportOptions{OutDir: t.TempDir(), Repos: repos, Specs: specs})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(done[0].Dir)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Environment.Spec == nil || !strings.HasPrefix(tk.Environment.TemplateName(), "task-") {
		t.Fatalf("imported task's environment: %+v", tk.Environment)
	}

	store, err := image.OpenStore(filepath.Join(t.TempDir(), "image"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	start := time.Now()
	name, err := tk.Environment.Ensure(t.Context(), store, nil, &log)
	if err != nil {
		t.Fatal(err)
	}
	cold := time.Since(start)
	start = time.Now()
	if _, err := tk.Environment.Ensure(t.Context(), store, nil, &log); err != nil {
		t.Fatal(err)
	}
	cached := time.Since(start)
	if n := strings.Count(log.String(), "(cached true)"); n != 1 || strings.Count(log.String(), "(cached false)") != 1 {
		t.Fatalf("want one cold build and one fully cached one:\n%s", log.String())
	}
	t.Logf("template %s: cold build %v, cached %v", name, cold.Round(time.Millisecond), cached.Round(time.Millisecond))
	info, err := store.Inspect(name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(info.Packages, func(p image.Package) bool { return p.Name == "python3-toml" }) {
		t.Fatalf("the template's record lacks python3-toml: %v", info.Packages)
	}

	m, err := env.NewManager(env.Config{StateDir: t.TempDir(), Images: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close the environment manager: %v", err)
		}
	})
	v := gradeIt(t, m, tk, []byte(gold), Options{})
	if !v.Resolved || !v.PatchApplied || len(v.FailToPass.Passed) != 1 || len(v.PassToPass.Passed) != 1 {
		t.Errorf("gold patch: %s", dump(v))
	}
	v = gradeIt(t, m, tk, nil, Options{})
	if v.Resolved || !slices.Equal(v.FailToPass.Failed, tk.FailToPass) || len(v.PassToPass.Passed) != 1 {
		t.Errorf("empty patch: want fail_to_pass failed and pass_to_pass passed: %s", dump(v))
	}

	// The environment's python3 is the template's (toml imports: the host's
	// cannot), and it is offline.
	info2, err := m.Create(t.Context(), env.CreateOptions{Owner: owner, Workspace: tk.Repo, Template: name})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Destroy(t.Context(), owner, info2.ID)
	res, err := m.Exec(t.Context(), owner, info2.ID, env.ExecRequest{Timeout: time.Minute, Cwd: "/workspace", Argv: []string{"python3", "-c",
		"import socket, toml; print(toml.__file__)\ntry:\n    socket.create_connection(('deb.debian.org', 80), 5); print('online')\nexcept OSError as e:\n    print('offline', e)"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := res.Stdout; res.ExitStatus() != 0 || !strings.HasPrefix(out, "/usr/lib/python3/dist-packages/toml/") || !strings.Contains(out, "offline") {
		t.Fatalf("in the environment: exit %d, stdout %q, stderr %q", res.ExitStatus(), out, res.Stderr)
	}
}
