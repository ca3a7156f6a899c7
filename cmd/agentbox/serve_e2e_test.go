package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestCLIAgainstDaemon drives a real daemon with the CLI.
func TestCLIAgainstDaemon(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	tr := d.track()
	out, errOut, st := d.cli("env", "create", "--workspace", filepath.Join(d.work, "proj"), "--label", "via=cli")
	if st != 0 {
		t.Fatalf("create: %d %s", st, errOut)
	}
	id := strings.TrimSpace(out)
	steps := []struct {
		args   []string
		stdin  string
		status int
		out    string // substring of stdout
		err    string // substring of stderr
	}{
		{[]string{"env", "ls", "--label", "via=cli"}, "", 0, id, ""},
		{[]string{"exec", id, "--", "cat", "hello.txt"}, "", 0, "hello\n", ""},
		{[]string{"exec", id, "--", "sh", "-c", "echo out; echo err >&2; exit 7"}, "", 7, "out\n", "err\n"},
		{[]string{"exec", "--timeout", "200ms", id, "--", "sleep", "10"}, "", 124, "", ""},
		{[]string{"exec", "--json", id, "--", "echo", "j"}, "", 0, `"stdout": "j\n"`, ""},
		{[]string{"fs", "ls", id}, "", 0, "hello.txt", ""},
		{[]string{"fs", "cat", id, "hello.txt"}, "", 0, "hello\n", ""},
		{[]string{"fs", "rm", id, "hello.txt"}, "", 0, "", ""},
		{[]string{"fs", "cat", id, "hello.txt"}, "", 125, "", "ENOENT"},
		{[]string{"fs", "cat", id, "../../etc/passwd"}, "", 125, "", "EPERM"},
		{[]string{"diff", id}, "", 0, "deleted file mode", ""},
		{[]string{"env", "pause", id}, "", 0, id + "\tpaused", ""},
		{[]string{"exec", id, "--", "true"}, "", 125, "", "EPAUSED"},
		{[]string{"env", "resume", id}, "", 0, id + "\trunning", ""},
		{[]string{"exec", id, "--", "echo", "again"}, "", 0, "again\n", ""},
		{[]string{"env", "rm", id}, "", 0, "", ""},
		{[]string{"exec", id, "--", "true"}, "", 125, "", "ENOENT"},
	}
	for _, s := range steps {
		t.Run(strings.Join(s.args, " "), func(t *testing.T) {
			o, e, st := d.cli(s.args...)
			if st != s.status || !strings.Contains(o, s.out) || !strings.Contains(e, s.err) {
				t.Fatalf("status %d stdout %q stderr %q", st, o, e)
			}
			if strings.Contains(e, d.state) || strings.Contains(e, d.work) {
				t.Fatalf("host path in %q", e)
			}
		})
	}
	// put, patch and exec --stdin read files.
	out, _, _ = d.cli("env", "create", "--workspace", filepath.Join(d.work, "proj"))
	id = strings.TrimSpace(out)
	src := filepath.Join(t.TempDir(), "n.txt")
	os.WriteFile(src, []byte("a\nb\n"), 0o644)
	if _, e, st := d.cli("fs", "put", id, "n.txt", src); st != 0 {
		t.Fatalf("put: %s", e)
	}
	patch := filepath.Join(t.TempDir(), "p.diff")
	os.WriteFile(patch, []byte("--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"), 0o644)
	if o, e, st := d.cli("patch", id, patch); st != 0 || !strings.Contains(o, "n.txt") {
		t.Fatalf("patch: %s %s", o, e)
	}
	if o, e, st := d.cli("exec", "--stdin", patch, id, "--", "wc", "-l"); strings.TrimSpace(o) != "6" {
		t.Fatalf("exec --stdin: %q %q %d", o, e, st)
	}
	if o, _, _ := d.cli("fs", "cat", id, "n.txt"); o != "a\nB\n" {
		t.Fatalf("after patch: %q", o)
	}
	d.cli("env", "rm", id)
	noLeaks(t, tr)
	tr.mustHaveSeen(t, 1)
}

// TestMCPStdio: the SDK's own client runs `agentbox mcp` as a subprocess
// (CommandTransport) and drives a real environment through the daemon.
func TestMCPStdio(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	tr := d.track()
	cmd := exec.Command(agentbox, "mcp")
	cmd.Env = append(os.Environ(), "AGENTBOX_SERVER="+d.socket, "AGENTBOX_TOKEN="+e2eToken)
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 29 {
		t.Fatalf("tools: %v %d", err, len(tools.Tools))
	}
	callJSON := func(name string, args map[string]any) (map[string]any, bool) { return callTool(t, ctx, cs, name, args) }
	e, isErr := callJSON("env_create", map[string]any{"workspace": filepath.Join(d.work, "proj")})
	if isErr {
		t.Fatalf("env_create: %v", e)
	}
	id := e["id"].(string)
	r, isErr := callJSON("exec", map[string]any{"id": id, "argv": []string{"cat", "hello.txt"}})
	if isErr || r["stdout"] != "hello\n" {
		t.Fatalf("exec: %v", r)
	}
	p, _ := callJSON("exec_start", map[string]any{"id": id, "argv": []string{"sh", "-c", "echo a; sleep 0.2; echo b"}})
	var text strings.Builder
	after := 0.0
	for i := 0; i < 20; i++ {
		o, isErr := callJSON("exec_output", map[string]any{"id": id, "process_id": p["process_id"], "after": after})
		if isErr {
			t.Fatalf("exec_output: %v", o)
		}
		for _, ev := range o["events"].([]any) {
			s, _ := ev.(map[string]any)["text"].(string) // the exit event has none
			text.WriteString(s)
		}
		after = o["last_seq"].(float64)
		if o["exited"] == true {
			break
		}
	}
	if text.String() != "a\nb\n" {
		t.Fatalf("streamed %q", text.String())
	}
	env, isErr := callJSON("env_get", map[string]any{"id": "no-such-env"})
	if !isErr || env["error"].(map[string]any)["code"] != "ENOENT" {
		t.Fatalf("missing env: %v", env)
	}
	if o, isErr := callJSON("env_destroy", map[string]any{"id": id}); isErr || o["destroyed"] != true {
		t.Fatalf("destroy: %v", o)
	}
	noLeaks(t, tr)
	tr.mustHaveSeen(t, 1)
}

// inspectorVersion is the MCP Inspector release the test installs: the newest that
// runs on Node 20 (2.x needs Node 22.19).
const inspectorVersion = "0.15.0"

// TestMCPInspector: a third-party client, the MCP Inspector's CLI from npm, lists
// and calls agentbox's tools over stdio.
func TestMCPInspector(t *testing.T) {
	testenv.SkipShort(t, "runs a Node.js client from npm (~10 s)")
	_, errNpx := exec.LookPath("npx")
	_, errNpm := exec.LookPath("npm")
	testenv.Require(t, errNpx == nil && errNpm == nil, "npx and npm (Node.js) for the MCP Inspector")
	// Where .ci/run installs it, in the TMPDIR the tests started with; else the
	// test installs it in its own.
	bin := filepath.Join(hostTmp, "agentbox-mcp-inspector-"+inspectorVersion, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		dir := t.TempDir()
		bin = filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund",
			"@modelcontextprotocol/inspector@"+inspectorVersion).CombinedOutput()
		if err != nil {
			t.Fatalf("npm install: %v\n%s", err, out)
		}
	}
	d := startDaemon(t, t.TempDir())
	tr := d.track()
	inspectEnv := append(os.Environ(), "AGENTBOX_SERVER="+d.socket, "AGENTBOX_TOKEN="+e2eToken)
	inspect := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--cli", agentbox, "mcp"}, args...)...)
		cmd.Env = inspectEnv
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("inspector output: %v\n%s", err, out)
		}
		return m
	}
	list := inspect("--method", "tools/list")
	var names []string
	for _, tool := range list["tools"].([]any) {
		tm := tool.(map[string]any)
		names = append(names, tm["name"].(string))
		ann := tm["annotations"].(map[string]any)
		if ann["openWorldHint"] != false || tm["outputSchema"] == nil {
			t.Errorf("%s: annotations %v, output schema %v", tm["name"], ann, tm["outputSchema"])
		}
	}
	sort.Strings(names)
	if len(names) != 29 || names[0] != "artifact_export" {
		t.Fatalf("tools %v", names)
	}
	created := inspect("--method", "tools/call", "--tool-name", "env_create", "--tool-arg", "workspace="+filepath.Join(d.work, "proj"))
	id := created["structuredContent"].(map[string]any)["id"].(string)
	listed := inspect("--method", "tools/call", "--tool-name", "env_list")
	if envs := listed["structuredContent"].(map[string]any)["environments"].([]any); len(envs) != 1 {
		t.Fatalf("env_list: %v", listed)
	}
	// The Inspector's CLI passes strings only: exec's command is how it runs one.
	ran := inspect("--method", "tools/call", "--tool-name", "exec", "--tool-arg", "id="+id, "--tool-arg", "command=cat hello.txt | tr a-z A-Z")
	if out := ran["structuredContent"].(map[string]any)["stdout"]; out != "HELLO\n" {
		t.Fatalf("exec command: %v", ran)
	}
	bad := inspect("--method", "tools/call", "--tool-name", "env_get", "--tool-arg", "id=nope")
	if bad["isError"] != true || !strings.Contains(fmt.Sprint(bad["content"]), `"code":"ENOENT"`) {
		t.Fatalf("env_get of a missing id: %v", bad)
	}
	inspect("--method", "tools/call", "--tool-name", "env_destroy", "--tool-arg", "id="+id)
	noLeaks(t, tr)
	tr.mustHaveSeen(t, 1)

	// With no daemon: the embedded server (each Inspector call is its own process,
	// so its environments end with the call).
	inspectEnv = append(os.Environ(), "AGENTBOX_SERVER=", "AGENTBOX_SOCKET="+filepath.Join(t.TempDir(), "none.sock"))
	if list := inspect("--method", "tools/list"); len(list["tools"].([]any)) != 29 {
		t.Fatalf("embedded tools/list: %v", list)
	}
	if listed := inspect("--method", "tools/call", "--tool-name", "env_list"); listed["isError"] == true {
		t.Fatalf("embedded env_list: %v", listed)
	}
}

// TestLoad: 50 concurrent clients each create an environment, run 10 commands,
// write and read files and destroy it: no error, nothing leaked. Records exec
// latency (client-side wall time of a synchronous exec of `true`).
func TestLoad(t *testing.T) {
	testenv.SkipShort(t, "50 clients with 50 environments (~6 s)")
	d := startDaemon(t, t.TempDir())
	tr := d.track()
	const clients, commands = 50, 10
	ctx := context.Background()
	// Baseline: one client, commands one after another.
	solo := d.client(e2eToken)
	se, err := solo.Create(ctx, client.CreateRequest{Workspace: filepath.Join(d.work, "proj")})
	if err != nil {
		t.Fatal(err)
	}
	var base []time.Duration
	for j := 0; j < 50; j++ {
		t0 := time.Now()
		if res, err := solo.Exec(ctx, se.ID, client.ExecRequest{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
			t.Fatalf("exec: %v %+v", err, res)
		}
		base = append(base, time.Since(t0))
	}
	solo.Destroy(ctx, se.ID)
	solo.Close()
	sort.Slice(base, func(i, j int) bool { return base[i] < base[j] })

	var mu sync.Mutex
	var lat []time.Duration
	var errs []error
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := d.client(e2eToken)
			defer c.Close()
			fail := func(err error) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("client %d: %w", i, err))
				mu.Unlock()
			}
			e, err := c.Create(ctx, client.CreateRequest{Workspace: filepath.Join(d.work, "proj")})
			if err != nil {
				fail(err)
				return
			}
			for j := 0; j < commands; j++ {
				t0 := time.Now()
				res, err := c.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"true"}})
				d := time.Since(t0)
				if err != nil || res.ExitCode != 0 {
					fail(fmt.Errorf("exec %d: %v %+v", j, err, res))
					continue
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
			data := []byte(fmt.Sprintf("client %d\n", i))
			if err := c.WriteFile(ctx, e.ID, "out.txt", data); err != nil {
				fail(err)
			}
			if b, err := c.ReadFile(ctx, e.ID, "out.txt", 0, 0); err != nil || string(b) != string(data) {
				fail(fmt.Errorf("read back %q %v", b, err))
			}
			if err := c.Destroy(ctx, e.ID); err != nil {
				fail(err)
			}
		}(i)
	}
	wg.Wait()
	total := time.Since(start)
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	t.Logf("%d clients x %d execs in %v: exec p50 %v, p99 %v, max %v (one client alone: p50 %v)", clients, commands,
		total.Round(time.Millisecond), p(0.5).Round(100*time.Microsecond), p(0.99).Round(100*time.Microsecond),
		lat[len(lat)-1].Round(100*time.Microsecond), base[len(base)/2].Round(100*time.Microsecond))
	if len(lat) != clients*commands {
		t.Fatalf("%d latencies", len(lat))
	}
	noLeaks(t, tr)
	tr.mustHaveSeen(t, clients/2)
}

// TestDaemonKilledMidLoad: SIGKILL the daemon while clients work, start a new one
// on the same state directory: every environment the first reported created is
// restored (its files kept, its running command lost), and once the second stops
// nothing of either remains.
func TestDaemonKilledMidLoad(t *testing.T) {
	testenv.SkipShort(t, "a daemon killed under load and restarted (~5 s)")
	dir := t.TempDir()
	d := startDaemon(t, dir)
	tr := d.track()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := d.client(e2eToken)
			for ctx.Err() == nil {
				e, err := c.Create(ctx, client.CreateRequest{Workspace: filepath.Join(d.work, "proj")})
				if err != nil {
					return // the daemon died
				}
				mu.Lock()
				ids = append(ids, e.ID)
				mu.Unlock()
				c.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"sleep", "300"}})
				if _, err := c.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"true"}}); err != nil {
					return
				}
			}
		}()
	}
	// Killed once a few environments exist, the clients still at work.
	if !eventually(time.Minute, func() bool { mu.Lock(); defer mu.Unlock(); return len(ids) >= 5 }) {
		t.Fatal("fewer than 5 environments created in a minute")
	}
	d.kill()
	cancel()
	wg.Wait()
	if len(ids) == 0 {
		t.Fatal("no environment was created before the kill")
	}
	t.Logf("killed the daemon with %d environments created", len(ids))
	// A new daemon on the same state directory.
	d2 := &daemon{t: t, socket: d.socket, state: d.state, work: d.work, cfg: d.cfg}
	d2.start()
	tr2 := d2.track()
	c := d2.client(e2eToken)
	envs, err := c.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every environment reported created was recorded first, so it is restored
	// (others may be too: created, the reply lost in the kill).
	listed := map[string]bool{}
	for _, e := range envs {
		listed[e.ID] = true
	}
	for _, id := range ids {
		if !listed[id] {
			t.Errorf("environment %s of the killed daemon not restored (%d listed)", id, len(envs))
		}
	}
	if res, err := c.Exec(context.Background(), ids[0], client.ExecRequest{Argv: []string{"cat", "hello.txt"}}); err != nil || res.Stdout != "hello\n" {
		t.Fatalf("a restored environment: %+v %v", res, err)
	}
	// The new daemon works, and leaves nothing either.
	e, err := c.Create(context.Background(), client.CreateRequest{Workspace: filepath.Join(d.work, "proj")})
	if err != nil {
		t.Fatal(err)
	}
	// (sh -c ...; sleep: long enough for the tracker to see its cgroups.)
	res, err := c.Exec(context.Background(), e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "cat hello.txt; sleep 0.3"}})
	if err != nil || res.Stdout != "hello\n" {
		t.Fatalf("after restart: %+v %v", res, err)
	}
	d2.stop() // destroys e and the restored ones
	noLeaks(t, tr)
	tr.mustHaveSeen(t, 1)
	noLeaks(t, tr2)
	tr2.mustHaveSeen(t, 1)
}
