package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestMCPEmbedded: `agentbox mcp` with no daemon reachable (issue 13: it refused to
// start) serves environments from its own process, through the SDK's client over
// stdio: a workspace under the user's home, exec with a shell command line, a
// refusal outside the roots that names workspace_roots, and nothing left behind
// once the client disconnects.
func TestMCPEmbedded(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	proj := filepath.Join(home, "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "hello.txt"), []byte("hello\n"), 0o644)
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o700)
	cmd := exec.Command(agentbox, "mcp")
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "TMPDIR="+tmp, "AGENTBOX_SERVER=", "AGENTBOX_TOKEN=",
		"AGENTBOX_SOCKET="+filepath.Join(dir, "run", "agentbox.sock")) // no daemon there
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if v := cs.InitializeResult().ServerInfo.Version; v == "" || v == "0.1.0" {
		t.Errorf("server version %q: want the build's", v)
	}
	call := func(name string, args map[string]any) (map[string]any, bool) { return callTool(t, ctx, cs, name, args) }
	e, isErr := call("env_create", map[string]any{"workspace": proj})
	if isErr {
		t.Fatalf("env_create under $HOME: %v\n%s", e, errOut.String())
	}
	id := e["id"].(string)
	if r, isErr := call("exec", map[string]any{"id": id, "command": "cat hello.txt | tr a-z A-Z"}); isErr || r["stdout"] != "HELLO\n" {
		t.Fatalf("exec command: %v", r)
	}
	if r, isErr := call("exec", map[string]any{"id": id, "argv": []string{"cat", "hello.txt"}}); isErr || r["stdout"] != "hello\n" {
		t.Fatalf("exec argv: %v", r)
	}
	if r, isErr := call("exec", map[string]any{"id": id, "argv": []string{"true"}, "command": "true"}); !isErr || r["error"].(map[string]any)["code"] != "EINVAL" {
		t.Fatalf("argv and command together: %v", r)
	}
	r, isErr := call("env_create", map[string]any{"workspace": "/etc"})
	if !isErr || !strings.Contains(r["error"].(map[string]any)["message"].(string), "workspace_roots") {
		t.Fatalf("workspace outside the roots: %v", r)
	}
	if r, isErr := call("env_destroy", map[string]any{"id": id}); isErr || r["destroyed"] != true {
		t.Fatalf("destroy: %v", r)
	}
	call("env_create", map[string]any{"workspace": proj}) // left for the exit to destroy
	cs.Close()
	if err := cmd.Wait(); err != nil && !strings.Contains(err.Error(), "Wait was already called") {
		t.Logf("mcp exit: %v", err)
	}
	if !strings.Contains(errOut.String(), "embedded") {
		t.Fatalf("stderr does not say which mode: %q", errOut.String())
	}
	// The sandboxes' fixed state root may stay; nothing in it or beside it.
	left, _ := os.ReadDir(tmp)
	sb, _ := os.ReadDir(filepath.Join(tmp, "agentbox-state"))
	if len(sb) != 0 || len(left) > 1 || (len(left) == 1 && left[0].Name() != "agentbox-state") {
		t.Fatalf("embedded mode left %v and %v in TMPDIR", left, sb)
	}
}
