package eval

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/testenv"
)

// pythonClient is the Python client's directory, for PYTHONPATH.
var pythonClient, _ = filepath.Abs("../../clients/python")

func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		testenv.Require(t, false, "no /usr/bin/python3 for the external agent")
	}
	return p
}

// TestExternalAgentResolvesCalc runs the sample Python agent (the client's
// examples/agent.py) as --agent-cmd on calc: it fixes add through the API, its
// diff is graded resolved like a built-in agent's, its output is kept in the
// attempt's directory, and its requests are counted as its tool calls.
func TestExternalAgentResolvesCalc(t *testing.T) {
	m, tasks := setup(t)
	tasks = tasks[1:] // calc
	if tasks[0].ID != "calc" {
		t.Fatalf("task %s, want calc", tasks[0].ID)
	}
	out := filepath.Join(t.TempDir(), "out")
	r, err := Run(t.Context(), Options{Service: m, Tasks: tasks, Suite: "test", PolicyName: "external", Out: out,
		AgentCmd: []string{python(t), filepath.Join(pythonClient, "examples", "agent.py")},
		AgentEnv: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	a := r.Attempts[0]
	stdout, _ := os.ReadFile(filepath.Join(out, a.Dir, agentStdoutFile))
	stderr, _ := os.ReadFile(filepath.Join(out, a.Dir, agentStderrFile))
	if a.Outcome != grade.Resolved || a.StopReason != "done" || a.AgentExitCode == nil || *a.AgentExitCode != 0 {
		t.Fatalf("attempt %+v\nstdout:\n%s\nstderr:\n%s", a, stdout, stderr)
	}
	if !bytes.Contains(stdout, []byte("replacing it with a + b")) || !bytes.Contains(stdout, []byte("public tests after: exit 0")) {
		t.Errorf("agent.stdout:\n%s", stdout)
	}
	patch, _ := os.ReadFile(filepath.Join(out, a.Dir, patchFile))
	if !bytes.Contains(patch, []byte("+    return a + b")) {
		t.Errorf("patch.diff:\n%s", patch)
	}
	if a.ToolCalls < 8 { // list, 2 × (start, events), read, str_replace, diff
		t.Errorf("%d requests counted, want at least 8", a.ToolCalls)
	}
	if !a.CostUnknown || r.Summary.CostUnknown != 1 {
		t.Errorf("an external agent's cost is known: %v, summary %d", a.CostUnknown, r.Summary.CostUnknown)
	}
	if r.Summary.Resolved != 1 {
		t.Errorf("summary %+v", r.Summary)
	}
}

// attacker is an external agent that tries to step outside its one
// environment: each step prints "ok NAME" when refused as it must be.
const attacker = `
import os, sys, json
import agentbox
ctx = agentbox.AgentContext()
c = ctx.client()
def step(name, fn, want):
    try:
        fn()
    except want:
        print("ok", name)
        return
    except Exception as e:
        print("FAIL", name, type(e).__name__, e)
        return
    print("FAIL", name, "was allowed")
step("create", lambda: c.create(workspace="/"), agentbox.PermissionDenied)
step("destroy", lambda: c.destroy(ctx.env_id), agentbox.PermissionDenied)
step("network", lambda: c._json("PUT", c._env(ctx.env_id) + "/network", {"allow": ["example.com"]}), agentbox.PermissionDenied)
foreign = os.environ["FOREIGN"]
step("get foreign", lambda: c.get(foreign), agentbox.NotFound)
step("exec foreign", lambda: c.exec(foreign, ["true"]), agentbox.NotFound)
step("no token", lambda: agentbox.Client(url=ctx.url, token="").list(), agentbox.AuthError)
envs = [e.id for e in c.list()]
print("ok list" if envs == [ctx.env_id] else "FAIL list %r" % envs)
r = c.exec(ctx.env_id, ["cat", "calc.py"], env=ctx.env)
print("ok own exec" if r.exit_code == 0 and "def add" in r.stdout else "FAIL own exec %r" % r)

# MCP over streamable HTTP, by hand: the same token, the same one environment.
import http.client, urllib.parse
u = urllib.parse.urlsplit(ctx.mcp_url)
session = None
def rpc(method, params, id=None):
    global session
    h = {"Authorization": "Bearer " + ctx.token, "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream"}
    if session:
        h["Mcp-Session-Id"] = session
    body = {"jsonrpc": "2.0", "method": method, "params": params}
    if id is not None:
        body["id"] = id
    conn = http.client.HTTPConnection(u.hostname, u.port)
    conn.request("POST", u.path, json.dumps(body), h)
    r = conn.getresponse()
    session = session or r.getheader("Mcp-Session-Id")
    text = r.read().decode()
    conn.close()
    for line in text.splitlines():
        if line.startswith("data:"):
            text = line[5:]
    return json.loads(text) if id is not None else r.status
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}, 1)
rpc("notifications/initialized", {})
r = rpc("tools/call", {"name": "exec", "arguments": {"id": ctx.env_id, "argv": ["cat", "calc.py"]}}, 2)
print("ok mcp exec" if "def add" in json.dumps(r) and not r["result"].get("isError") else "FAIL mcp exec %r" % r)
r = rpc("tools/call", {"name": "env_create", "arguments": {"workspace": "/"}}, 3)
print("ok mcp create" if r["result"].get("isError") and "EPERM" in json.dumps(r) else "FAIL mcp create %r" % r)
print("environ", json.dumps(sorted(k for k in os.environ if k != "LC_CTYPE")))  # Python sets LC_CTYPE itself (PEP 538)
`

// TestExternalAgentBoundaries: the token an external agent gets reaches its one
// environment only: it cannot create, destroy or open the network of one, sees no
// other (a foreign id is not found), and without the token nothing answers. Its
// process environment is AgentEnv and the AGENTBOX_ variables alone.
func TestExternalAgentBoundaries(t *testing.T) {
	m, tasks := setup(t)
	tasks = tasks[1:]
	foreign, err := m.Create(t.Context(), env.CreateOptions{Owner: env.Owner{Tenant: "local"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Destroy(t.Context(), env.Owner{Tenant: "local"}, foreign.ID)
	t.Setenv("AGENTBOX_TEST_PLANTED", "sk-planted-secret")
	out := filepath.Join(t.TempDir(), "out")
	r, err := Run(t.Context(), Options{Service: m, Tasks: tasks, Suite: "test", PolicyName: "external", Out: out,
		AgentCmd: []string{python(t), "-c", attacker},
		AgentEnv: []string{"PATH=/usr/bin:/bin", "PYTHONPATH=" + pythonClient, "FOREIGN=" + foreign.ID}})
	if err != nil {
		t.Fatal(err)
	}
	a := r.Attempts[0]
	stdout, _ := os.ReadFile(filepath.Join(out, a.Dir, agentStdoutFile))
	stderr, _ := os.ReadFile(filepath.Join(out, a.Dir, agentStderrFile))
	for _, step := range []string{"create", "destroy", "network", "get foreign", "exec foreign", "no token", "list", "own exec", "mcp exec", "mcp create"} {
		if !bytes.Contains(stdout, []byte("ok "+step+"\n")) {
			t.Errorf("step %s not refused as it must be", step)
		}
	}
	if bytes.Contains(stdout, []byte("FAIL")) || a.StopReason != "done" || a.Outcome != grade.Unresolved {
		t.Errorf("attempt %s %s\nstdout:\n%s\nstderr:\n%s", a.StopReason, a.Outcome, stdout, stderr)
	}
	want := `environ ["AGENTBOX_AGENT_FILE", "AGENTBOX_ENV_ID", "AGENTBOX_MCP_URL", "AGENTBOX_TOKEN", "AGENTBOX_URL", "FOREIGN", "PATH", "PYTHONPATH"]`
	if !bytes.Contains(stdout, []byte(want)) {
		t.Errorf("the agent's environment is not AgentEnv and AGENTBOX_*; want %s in\n%s", want, stdout)
	}
}

// TestExternalAgentWallBudget: an agent that outlives its wall budget is killed
// with everything it started (its process group), the attempt records
// budget_exhausted, and what it changed until then is graded.
func TestExternalAgentWallBudget(t *testing.T) {
	m, tasks := setup(t)
	tasks = tasks[1:]
	out := filepath.Join(t.TempDir(), "out")
	r, err := Run(t.Context(), Options{Service: m, Tasks: tasks, Suite: "test", PolicyName: "external", Out: out,
		AgentCmd: []string{"/bin/sh", "-c", "sleep 600 & echo $!; wait"}, AgentEnv: []string{"PATH=/usr/bin:/bin"},
		Limits: agent.Limits{MaxWall: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	a := r.Attempts[0]
	stdout, _ := os.ReadFile(filepath.Join(out, a.Dir, agentStdoutFile))
	stderr, _ := os.ReadFile(filepath.Join(out, a.Dir, agentStderrFile))
	if a.StopReason != "budget_exhausted" || a.Outcome != grade.Unresolved || !bytes.Contains(stderr, []byte("wall budget")) {
		t.Fatalf("attempt %s %s\nstderr:\n%s", a.StopReason, a.Outcome, stderr)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(stdout)))
	if err != nil {
		t.Fatalf("agent.stdout %q: %v", stdout, err)
	}
	// Killed is gone or a zombie waiting for its new parent to reap it.
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) == 0 || f[0] != "Z" {
			t.Errorf("the agent's child %d survived its wall budget: %s", pid, b)
		}
	}
}

// TestExternalAgentExitStatus: an agent's exit status is recorded and decides
// nothing: one that fixes calc and exits 3 is resolved with stop reason
// agent_error, one that exits 0 having changed nothing is unresolved.
func TestExternalAgentExitStatus(t *testing.T) {
	m, tasks := setup(t)
	tasks = tasks[1:]
	fix := `import agentbox; c = agentbox.AgentContext(); e = c.client()
src = e.read_file(c.env_id, "calc.py").decode()
e.write_file(c.env_id, "calc.py", src.replace("return a - b", "return a + b", 1))
raise SystemExit(3)`
	for _, tc := range []struct {
		name    string
		argv    []string
		code    int
		stop    string
		outcome grade.Outcome
	}{
		{"fixed, exit 3", []string{python(t), "-c", fix}, 3, "agent_error", grade.Resolved},
		{"nothing, exit 0", []string{"/bin/true"}, 0, "done", grade.Unresolved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(t.Context(), Options{Service: m, Tasks: tasks, Suite: "test", PolicyName: "external",
				Out: filepath.Join(t.TempDir(), "out"), AgentCmd: tc.argv,
				AgentEnv: []string{"PATH=/usr/bin:/bin", "PYTHONPATH=" + pythonClient}})
			if err != nil {
				t.Fatal(err)
			}
			a := r.Attempts[0]
			if a.AgentExitCode == nil || *a.AgentExitCode != tc.code || a.StopReason != tc.stop || a.Outcome != tc.outcome {
				t.Errorf("exit %v, stop %s, outcome %s (%s); want %d, %s, %s", a.AgentExitCode, a.StopReason, a.Outcome, a.Error, tc.code, tc.stop, tc.outcome)
			}
		})
	}
}
