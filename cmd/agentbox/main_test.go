package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/config"
)

var (
	agentbox string // the binary under test, built once
	// hostTmp is the TMPDIR the tests were started with; TestMain points TMPDIR
	// at a private directory for everything else.
	hostTmp = os.TempDir()
)

// TestMain builds the binary and gives the tests, and every agentbox they start,
// a TMPDIR of their own: the state directories agentbox keeps there (those of the
// in-process environment managers, the sandboxes' upper layers) are then this
// binary's alone, and the leftover checks look only at what its tests made.
func TestMain(m *testing.M) {
	if kind := os.Getenv(mcpHelperEnv); kind != "" {
		os.Exit(servePasteMCP(kind)) // this process is an MCP server for TestAgentMCPCLI
	}
	dir, err := os.MkdirTemp("", "agentbox-cli-")
	if err != nil {
		panic(err)
	}
	// Traversable: a sandbox's host uid reaches its upper layer below TMPDIR.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o711); err != nil || os.Chmod(dir, 0o711) != nil {
		panic(fmt.Sprint("private TMPDIR: ", err))
	}
	os.Setenv("TMPDIR", tmp)
	goCacheDir = filepath.Join(tmp, "gocache")
	agentbox = filepath.Join(dir, "agentbox")
	// With the sandbox init beside it, as installed (README).
	if out, err := exec.Command("go", "build", "-o", dir, ".", "../agentbox-init").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func cli(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(agentbox, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	status = 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), status
}

func TestExitStatuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		stderr string
	}{
		{"own status", []string{"run", "--isolation", "process", "--", "sh", "-c", "exit 7"}, 7, ""},
		{"signal", []string{"run", "--isolation", "process", "--", "sh", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{"timeout", []string{"run", "--isolation", "process", "--timeout", "200ms", "--", "sleep", "10"}, 124, "timeout"},
		{"not found", []string{"run", "--isolation", "process", "--", "no-such-command-agentbox"}, 127, "not found"},
		{"not executable", []string{"run", "--isolation", "process", "--", "/etc/hostname"}, 126, "cannot execute"},
		{"no command", []string{"run"}, 125, "no command given"},
		{"bad size", []string{"run", "--memory", "12Q", "--", "true"}, 125, `invalid size "12Q"`},
		{"bad duration", []string{"run", "--timeout", "soon", "--", "true"}, 125, "--timeout"},
		{"bad isolation", []string{"run", "--isolation", "vm", "--", "true"}, 125, "use process, namespace or gvisor"},
		{"bad env", []string{"run", "--env", "NOVALUE", "--", "true"}, 125, "KEY=VALUE"},
		{"unknown flag", []string{"run", "--frobnicate", "--", "true"}, 125, "unknown flag"},
		// Issue 13: a group given an unknown subcommand printed its help and exited 0.
		{"unknown subcommand", []string{"env", "frobnicate"}, 125, `unknown command "frobnicate" for "agentbox env"`},
		{"subcommand suggestion", []string{"env", "lss"}, 125, "Did you mean this?\n\tls"},
		{"nested group", []string{"config", "int"}, 125, "init"},
		{"unknown command", []string{"envv"}, 125, "Did you mean this?\n\tenv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, status := cli(t, tc.args...)
			if status != tc.status {
				t.Fatalf("status %d, want %d; stderr %q", status, tc.status, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("stderr %q does not say %q", stderr, tc.stderr)
			}
		})
	}
}

func TestJSONIsOneObject(t *testing.T) {
	stdout, _, status := cli(t, "run", "--isolation", "process", "--json", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if status != 3 {
		t.Fatalf("status %d", status)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	var res map[string]any
	if err := dec.Decode(&res); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout: %q", stdout)
	}
	for _, k := range []string{"exit_code", "signal", "timed_out", "cancelled", "oom_killed", "limit", "stdout", "stderr", "stdout_truncated", "stderr_truncated", "stdout_bytes", "stderr_bytes", "duration_ms", "cpu_user_ms", "cpu_sys_ms", "memory_peak_bytes", "survivors", "isolation"} {
		if _, ok := res[k]; !ok {
			t.Errorf("field %s missing", k)
		}
	}
	if res["stdout"] != "out\n" || res["stderr"] != "err\n" || res["exit_code"] != 3.0 {
		t.Fatalf("result %v", res)
	}
}

// SIGTERM to agentbox mid-run kills the whole tree, including a setsid daemon, before
// agentbox exits.
func TestSIGTERMToAgentboxKillsTree(t *testing.T) {
	ws := t.TempDir()
	cmd := exec.Command(agentbox, "run", "--isolation", "process", "--workspace", ws, "--kill-grace", "200ms", "--",
		"sh", "-c", `sleep 300 & echo $! >> pids; setsid sh -c 'echo $$ >> pids; exec sleep 301' & wait`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(ws, "pids")
	deadline := time.Now().Add(time.Minute)
	var pids []int
	for time.Now().Before(deadline) && len(pids) < 2 {
		time.Sleep(20 * time.Millisecond)
		b, _ := os.ReadFile(pidFile)
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
	}
	if len(pids) < 2 {
		t.Fatalf("processes did not start: %v", pids)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 128+15 {
		t.Fatalf("agentbox exit: %v, want status 143", err)
	}
	for _, pid := range pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
			t.Fatalf("process %d survived: %s", pid, b)
		}
	}
}

// Flag parsing never panics and either rejects input or yields a valid spec.
func FuzzRunFlags(f *testing.F) {
	for _, s := range []string{"--memory 1G", "--timeout -1s", "--pids x", "--output-limit 99999999999999999999", "--env =", "--cpus NaN", "--open-files 3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cmd, o := newRunCmd()
		if err := cmd.ParseFlags(strings.Fields(s)); err != nil {
			return
		}
		o.spec.Argv = []string{"true"}
		if err := o.validate(); err != nil {
			return
		}
		l := o.spec.Limits
		if l.Memory < 0 || l.Pids < 0 || l.OutputLimit < 0 || l.OutputTotal < 0 || l.FileSize < 0 || l.OpenFiles < 0 || l.Timeout < 0 || l.CPUs < 0 {
			t.Fatalf("accepted negative limits from %q: %+v", s, l)
		}
	})
}

// TestVersion: --version names the build (issue 13); a test binary's build has no
// VCS stamp, so only the shape is checked here (version.TestFromBuildInfo checks
// the fields).
func TestVersion(t *testing.T) {
	out, _, st := cli(t, "--version")
	if st != 0 || !strings.HasPrefix(out, "agentbox ") || !strings.Contains(out, "go1.") {
		t.Fatalf("--version: %d %q", st, out)
	}
	// A group with no arguments still shows its help.
	if out, _, st := cli(t, "env"); st != 0 || !strings.Contains(out, "Available Commands") {
		t.Fatalf("env: %d %q", st, out)
	}
}

// TestDoctorJSON: doctor --json uses snake_case keys like every other report.
func TestDoctorJSON(t *testing.T) {
	out, _, _ := cli(t, "doctor", "--json")
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range []string{"checks", "landlock_abi", "cgroup_version", "runsc", "missing"} {
		if _, ok := r[k]; !ok {
			t.Errorf("key %s missing: %s", k, out)
		}
	}
	c := r["checks"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "required", "ok", "detail"} {
		if _, ok := c[k]; !ok {
			t.Errorf("check key %s missing: %v", k, c)
		}
	}
}

// TestConfigInit: config init writes a configuration serve loads, with its token
// file, refuses to replace it, and honours $AGENTBOX_CONFIG.
func TestConfigInit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "conf", "agentbox.yaml")
	if _, e, st := cli(t, "config", "init", p); st != 0 || !strings.Contains(e, "agentbox serve --config "+p) {
		t.Fatalf("config init: %d %s", st, e)
	}
	c, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "conf", "agentbox.token"))
	if err != nil || c.Tokens[0].Digest != sha256.Sum256(bytes.TrimSpace(tok)) {
		t.Fatalf("token file: %v", err)
	}
	if _, e, st := cli(t, "config", "init", p); st != 125 || !strings.Contains(e, "--force") {
		t.Fatalf("second init: %d %s", st, e)
	}
	if _, e, st := cli(t, "config", "init", "--force", p); st != 0 {
		t.Fatalf("init --force: %d %s", st, e)
	}
	if tok2, _ := os.ReadFile(filepath.Join(dir, "conf", "agentbox.token")); !bytes.Equal(tok, tok2) {
		t.Fatal("init --force replaced the existing token")
	}
	env := filepath.Join(dir, "env.yaml")
	cmd := exec.Command(agentbox, "config", "init")
	cmd.Env = append(os.Environ(), "AGENTBOX_CONFIG="+env)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("config init with AGENTBOX_CONFIG: %v %s", err, out)
	}
	if _, err := config.Load(env); err != nil {
		t.Fatalf("AGENTBOX_CONFIG ignored: %v", err)
	}
}
