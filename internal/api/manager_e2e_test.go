package api_test

// End to end: the Go client → the HTTP server → the real env.Manager (sandboxes,
// overlays, cgroups). Needs root.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/mcp"
	"github.com/agentbox/agentbox/internal/testenv"
)

// newManager is the one place that knows env.Manager's constructor.
func newManager(t *testing.T, cfg env.Config) *env.Manager {
	t.Helper()
	m, err := env.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

type e2e struct {
	ts    *httptest.Server
	state string
	root  string // tenant a's workspace root
	ws    string // a project under it
	a, b  *client.Client
	mgr   *env.Manager
}

func newE2E(t *testing.T) *e2e { return newE2EWith(t, func(*config.Config) {}) }

// newE2EWith is newE2E with the test configuration changed by edit.
func newE2EWith(t *testing.T, edit func(*config.Config)) *e2e {
	testenv.RequireRoot(t)
	x := &e2e{state: t.TempDir(), root: t.TempDir()}
	x.ws = filepath.Join(x.root, "proj")
	os.MkdirAll(filepath.Join(x.ws, "sub"), 0o755)
	os.WriteFile(filepath.Join(x.ws, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	os.WriteFile(filepath.Join(x.ws, "sub", "b.go"), []byte("package sub\n"), 0o644)
	cfg, err := config.Parse([]byte(fmt.Sprintf(api.TestConfig, x.root)), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir = x.state
	edit(cfg)
	x.mgr = newManager(t, api.EnvConfig(cfg))
	s, err := api.New(api.Options{Config: cfg, Service: x.mgr})
	if err != nil {
		t.Fatal(err)
	}
	mcp.Mount(s, mcp.Options{Service: s.Service(), Redactor: s.Redactor()}, nil)
	x.ts = httptest.NewServer(s.Handler())
	t.Cleanup(x.ts.Close)
	x.a, _ = client.New(client.Options{URL: x.ts.URL, Token: api.TokA})
	x.b, _ = client.New(client.Options{URL: x.ts.URL, Token: api.TokB})
	t.Cleanup(func() { x.a.Close(); x.b.Close() })
	return x
}

// noHostPaths fails if an error reaching a caller names a host directory.
func (x *e2e) noHostPaths(t *testing.T, err error) {
	t.Helper()
	if err != nil && (strings.Contains(err.Error(), x.state) || strings.Contains(err.Error(), x.root)) {
		t.Fatalf("host path in an error: %v", err)
	}
}

func TestE2EEnvironmentLifecycle(t *testing.T) {
	x := newE2E(t)
	// A hang fails the test instead of the binary's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := x.a.Create(ctx, client.CreateRequest{Workspace: x.ws, Labels: map[string]string{"suite": "e2e"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("exec", func(t *testing.T) {
		res, err := x.a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "cat a.txt; echo err >&2; exit 3"}})
		if err != nil || res.ExitCode != 3 || res.Stdout != "one\ntwo\nthree\n" || res.Stderr != "err\n" || res.Survivors != 0 {
			t.Fatalf("%+v %v", res, err)
		}
		res, err = x.a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"sleep", "5"}, TimeoutSeconds: 0.2})
		if err != nil || !res.TimedOut || res.Limit != "timeout" {
			t.Fatalf("timeout: %+v %v", res, err)
		}
	})
	t.Run("background and events", func(t *testing.T) {
		proc, err := x.a.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "for i in 1 2 3; do echo $i; sleep 0.05; done; read x; echo got $x"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.a.WriteStdin(ctx, e.ID, proc, []byte("hello\n"), true); err != nil {
			t.Fatal(err)
		}
		st := x.a.Events(ctx, e.ID, proc, 0)
		var out strings.Builder
		var last client.Event
		for {
			ev, err := st.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Seq != last.Seq+1 {
				t.Fatalf("sequence jumps from %d to %d", last.Seq, ev.Seq)
			}
			last = ev
			out.Write(ev.Data)
		}
		if out.String() != "1\n2\n3\ngot hello\n" || last.Kind != "exit" || last.Result.ExitCode != 0 {
			t.Fatalf("output %q, last %+v", out.String(), last)
		}
		// Resuming after the last but one event gives only the exit event. (How
		// the output was cut into events depends on timing: "after the third"
		// found nothing after it when the four lines came in three.)
		st = x.a.Events(ctx, e.ID, proc, last.Seq-1)
		ev, err := st.Next()
		st.Close()
		if err != nil || ev.Seq != last.Seq || ev.Kind != "exit" {
			t.Fatalf("resume: %+v %v", ev, err)
		}
		res, err := x.a.Wait(ctx, e.ID, proc)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("wait: %+v %v", res, err)
		}
	})
	t.Run("signal", func(t *testing.T) {
		proc, err := x.a.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"sleep", "30"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.a.Signal(ctx, e.ID, proc, "TERM"); err != nil {
			t.Fatal(err)
		}
		res, err := x.a.Wait(ctx, e.ID, proc)
		if err != nil || res.Signal == nil || *res.Signal != "SIGTERM" {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("files", func(t *testing.T) {
		if err := x.a.WriteFile(ctx, e.ID, "new/c.txt", []byte("abcdef")); err != nil {
			// parents may have to exist
			if err := x.a.Mkdir(ctx, e.ID, "new"); err != nil {
				t.Fatal(err)
			}
			if err := x.a.WriteFile(ctx, e.ID, "new/c.txt", []byte("abcdef")); err != nil {
				t.Fatal(err)
			}
		}
		b, err := x.a.ReadFile(ctx, e.ID, "new/c.txt", 2, 3)
		if err != nil || string(b) != "cde" {
			t.Fatalf("range %q %v", b, err)
		}
		ents, err := x.a.ListDir(ctx, e.ID, ".")
		if err != nil || len(ents) < 3 {
			t.Fatalf("list %+v %v", ents, err)
		}
		st, err := x.a.Stat(ctx, e.ID, "sub")
		if err != nil || st.Type != "dir" {
			t.Fatalf("stat %+v %v", st, err)
		}
		res, _ := x.a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"cat", "new/c.txt"}})
		if res.Stdout != "abcdef" {
			t.Fatalf("the sandbox sees %q", res.Stdout)
		}
		if err := x.a.Remove(ctx, e.ID, "new"); err != nil {
			t.Fatal(err)
		}
		_, err = x.a.Stat(ctx, e.ID, "new/c.txt")
		if !client.IsCode(err, "ENOENT") {
			t.Fatalf("removed: %v", err)
		}
		x.noHostPaths(t, err)
		var tb bytes.Buffer
		if err := x.a.Download(ctx, e.ID, "sub", &tb); err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(&tb)
		h, err := tr.Next()
		if err != nil || !strings.HasSuffix(h.Name, "b.go") {
			t.Fatalf("tar %+v %v", h, err)
		}
		var up bytes.Buffer
		tw := tar.NewWriter(&up)
		tw.WriteHeader(&tar.Header{Name: "u.txt", Mode: 0o644, Size: 2})
		tw.Write([]byte("up"))
		tw.Close()
		if err := x.a.Upload(ctx, e.ID, "sub", &up); err != nil {
			t.Fatal(err)
		}
		if b, err := x.a.ReadFile(ctx, e.ID, "sub/u.txt", 0, 0); err != nil || string(b) != "up" {
			t.Fatalf("uploaded %q %v", b, err)
		}
	})
	t.Run("path safety", func(t *testing.T) {
		for _, p := range []string{"../../etc/passwd", "/etc/passwd"} {
			_, err := x.a.ReadFile(ctx, e.ID, p, 0, 0)
			if !client.IsCode(err, "EPERM") && !client.IsCode(err, "EINVAL") {
				t.Fatalf("%s: %v", p, err)
			}
			x.noHostPaths(t, err)
		}
		// A symlink the sandbox plants to a host file is not followed.
		if _, err := x.a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"ln", "-s", "/etc/shadow", "leak"}}); err != nil {
			t.Fatal(err)
		}
		b, err := x.a.ReadFile(ctx, e.ID, "leak", 0, 0)
		if err == nil {
			t.Fatalf("read through a planted symlink: %q", b)
		}
		x.noHostPaths(t, err)
	})
	t.Run("edits and diff", func(t *testing.T) {
		patch := "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
		rep, err := x.a.ApplyPatch(ctx, e.ID, []byte(patch))
		if err != nil || len(rep.Files) != 1 || rep.Files[0].Path != "a.txt" {
			t.Fatalf("patch %+v %v", rep, err)
		}
		_, err = x.a.ApplyPatch(ctx, e.ID, []byte(patch)) // no longer applies
		if !client.IsCode(err, "ECONFLICT") {
			t.Fatalf("stale patch: %v", err)
		}
		x.noHostPaths(t, err)
		if err := x.a.StrReplace(ctx, e.ID, "a.txt", "three", "3"); err != nil {
			t.Fatal(err)
		}
		err = x.a.StrReplace(ctx, e.ID, "a.txt", "nothing", "x")
		if !client.IsCode(err, "ECONFLICT") {
			t.Fatalf("no match: %v", err)
		}
		d, err := x.a.Diff(ctx, e.ID)
		if err != nil || !bytes.Contains(d, []byte("+TWO")) || !bytes.Contains(d, []byte("+3")) {
			t.Fatalf("diff %s %v", d, err)
		}
		if b, _ := os.ReadFile(filepath.Join(x.ws, "a.txt")); string(b) != "one\ntwo\nthree\n" {
			t.Fatalf("the host workspace changed: %q", b)
		}
	})
	t.Run("artifacts and tenancy", func(t *testing.T) {
		art, err := x.a.Export(ctx, e.ID, "a.txt")
		if err != nil || !strings.HasPrefix(art.Ref, "sha256:") || art.Owner.Tenant != "a" {
			t.Fatalf("export %+v %v", art, err)
		}
		b, meta, err := x.a.ReadArtifact(ctx, art.Ref, 0, 0)
		if err != nil || string(b) != "one\nTWO\n3\n" || meta.Ref != art.Ref {
			t.Fatalf("read artifact %q %+v %v", b, meta, err)
		}
		_, _, errForeign := x.b.ReadArtifact(ctx, art.Ref, 0, 0)
		fake := "sha256:" + strings.Repeat("0", 64)
		_, _, errMissing := x.b.ReadArtifact(ctx, fake, 0, 0)
		if !client.IsCode(errForeign, "ENOENT") || strings.Replace(errForeign.Error(), art.Ref, fake, 1) != errMissing.Error() {
			t.Fatalf("foreign artifact %v vs missing %v", errForeign, errMissing)
		}
		_, errForeign = x.b.Get(ctx, e.ID)
		missing := strings.Repeat("z", len(e.ID))
		_, errMissing = x.b.Get(ctx, missing)
		if !client.IsCode(errForeign, "ENOENT") || strings.Replace(errForeign.Error(), e.ID, missing, 1) != errMissing.Error() {
			t.Fatalf("foreign env %v vs missing %v", errForeign, errMissing)
		}
		if err := x.b.Destroy(ctx, e.ID); err != nil {
			t.Fatalf("foreign destroy should look like a missing one (204): %v", err)
		}
		if _, err := x.a.Get(ctx, e.ID); err != nil {
			t.Fatalf("tenant b destroyed tenant a's environment: %v", err)
		}
	})
	if err := x.a.Destroy(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if err := x.a.Destroy(ctx, e.ID); err != nil {
		t.Fatalf("destroy is idempotent: %v", err)
	}
	// The owner still sees it, destroyed, for a while; using it is ENOENT.
	if got, err := x.a.Get(ctx, e.ID); err != nil || got.State != "destroyed" {
		t.Fatalf("after destroy: %+v %v", got, err)
	}
	_, err = x.a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"true"}})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "ENOENT" || ce.Message != "environment destroyed or expired" {
		t.Fatalf("exec after destroy: %v", err)
	}
	// Another tenant cannot tell a destroyed environment from a missing one.
	if _, err := x.b.Get(ctx, e.ID); !client.IsCode(err, "ENOENT") || strings.Contains(err.Error(), "destroyed") {
		t.Fatalf("tenant b on a's destroyed environment: %v", err)
	}
	if mounts := mountsUnder(t, x.state); len(mounts) > 0 {
		t.Fatalf("mounts left: %v", mounts)
	}
}

// TestE2EMCPOverHTTP: the SDK's own client, over streamable HTTP, drives a real
// environment.
func TestE2EMCPOverHTTP(t *testing.T) {
	x := newE2E(t)
	cs, err := mcpSession(t, x.ts.URL, api.TokA)
	if err != nil {
		t.Fatal(err)
	}
	var e client.Environment
	if ee := call(t, cs, "env_create", map[string]any{"workspace": x.ws}, &e); ee != nil {
		t.Fatalf("env_create: %+v", ee)
	}
	var res client.Result
	if ee := call(t, cs, "exec", map[string]any{"id": e.ID, "argv": []string{"sh", "-c", "echo hi > f; cat f"}}, &res); ee != nil || res.Stdout != "hi\n" {
		t.Fatalf("exec %+v %+v", ee, res)
	}
	var d struct{ Diff string }
	if ee := call(t, cs, "diff", map[string]any{"id": e.ID}, &d); ee != nil || !strings.Contains(d.Diff, "+hi") {
		t.Fatalf("diff %+v %q", ee, d.Diff)
	}
	var r struct{ Content string }
	ee := call(t, cs, "file_read", map[string]any{"id": e.ID, "path": "../../etc/passwd"}, &r)
	if ee == nil || (ee.Code != "EPERM" && ee.Code != "EINVAL") || strings.Contains(ee.Message, x.state) {
		t.Fatalf("escape: %+v", ee)
	}
	var forks struct{ Environments []client.Environment }
	if ee := call(t, cs, "env_fork", map[string]any{"id": e.ID, "count": 1}, &forks); ee != nil || len(forks.Environments) != 1 {
		t.Fatalf("env_fork %+v %+v", ee, forks)
	}
	for _, f := range forks.Environments {
		if ee := call(t, cs, "exec", map[string]any{"id": f.ID, "argv": []string{"cat", "f"}}, &res); ee != nil || res.Stdout != "hi\n" {
			t.Fatalf("exec in a fork %+v %+v", ee, res)
		}
	}
	var sn client.Snapshot
	if ee := call(t, cs, "env_snapshot", map[string]any{"id": e.ID}, &sn); ee != nil || sn.EnvID != e.ID || sn.Depth != 2 {
		t.Fatalf("env_snapshot %+v %+v", ee, sn)
	}
	var out struct{ Destroyed bool }
	if ee := call(t, cs, "env_destroy", map[string]any{"id": e.ID}, &out); ee != nil || !out.Destroyed {
		t.Fatalf("destroy %+v", ee)
	}
}

// TestE2EWorkspaceFull: what the API writes into an environment is bound by its
// workspace_bytes (its upper layer's tmpfs), whoever's memory it is charged to;
// past it a write is 507 ENOSPC, not retryable (issue 10, findings 9 and 12), and
// what was written before is intact.
func TestE2EWorkspaceFull(t *testing.T) {
	x := newE2E(t)
	ctx := context.Background()
	e, err := x.a.Create(ctx, client.CreateRequest{Workspace: x.ws,
		Limits: client.Limits{MemoryBytes: 64 << 20, WorkspaceBytes: 4 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("w"), 1<<20) // request_bytes is 1M
	var full *client.Error
	n := 0
	for ; n < 16 && full == nil; n++ {
		if err := x.a.WriteFile(ctx, e.ID, fmt.Sprintf("f%d", n), chunk); err != nil && !errors.As(err, &full) {
			t.Fatal(err)
		}
	}
	if full == nil || full.Status != 507 || full.Code != "ENOSPC" || full.Retryable || full.SuggestedAction == "" || n > 5 {
		t.Fatalf("after %d writes of 1M into a 4M workspace: %+v", n, full)
	}
	x.noHostPaths(t, full)
	if b, err := x.a.ReadFile(ctx, e.ID, "f0", 0, 0); err != nil || !bytes.Equal(b, chunk) {
		t.Fatalf("an earlier file after ENOSPC: %d bytes, %v", len(b), err)
	}
	if err := x.a.Remove(ctx, e.ID, "f0"); err != nil {
		t.Fatal(err)
	}
	if err := x.a.WriteFile(ctx, e.ID, "again", chunk); err != nil {
		t.Fatalf("after freeing 1M: %v", err)
	}
}

// TestE2ETruncatedOutputRef: a truncated stream's whole output is an artifact,
// and its ref reaches the client (it was dropped on the wire).
func TestE2ETruncatedOutputRef(t *testing.T) {
	x := newE2E(t)
	ctx := context.Background()
	e, err := x.a.Create(ctx, client.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"seq", "1", "100000"}, OutputLimit: 100})
	if err != nil || !res.StdoutTruncated || res.StdoutRef == "" || res.StderrRef != "" {
		t.Fatalf("%+v %v", res, err)
	}
	b, _, err := x.a.ReadArtifact(ctx, res.StdoutRef, 0, 0)
	if err != nil || int64(len(b)) != res.StdoutBytes || !strings.HasSuffix(string(b), "\n99999\n100000\n") {
		t.Fatalf("the artifact: %d bytes of %d, %v", len(b), res.StdoutBytes, err)
	}
}

// TestE2EArtifactQuota guards issue 10's finding 10 at the API: a tenant past its
// artifact quota gets 429 EQUOTA with what to do, over HTTP and as a command's
// truncated output (no ref, the result intact), and loses no artifact it has.
func TestE2EArtifactQuota(t *testing.T) {
	x := newE2EWith(t, func(c *config.Config) {
		a := c.Tenants["a"]
		a.Quota.Artifacts = 2
		c.Tenants["a"] = a
	})
	ctx := context.Background()
	e, err := x.a.Create(ctx, client.CreateRequest{Workspace: x.ws})
	if err != nil {
		t.Fatal(err)
	}
	var kept []client.Artifact
	for _, p := range []string{"a.txt", "sub/b.go"} {
		art, err := x.a.Export(ctx, e.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, art)
	}
	x.a.WriteFile(ctx, e.ID, "c.txt", []byte("third\n"))
	_, err = x.a.Export(ctx, e.ID, "c.txt")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 429 || ce.Code != "EQUOTA" || ce.Retryable ||
		!strings.Contains(ce.Message, "artifact quota") || !strings.Contains(ce.SuggestedAction, "removed 168h0m0s after") {
		t.Fatalf("a third artifact over a quota of 2: %v", err)
	}
	x.noHostPaths(t, err)
	res, err := x.a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"seq", "1", "100000"}, OutputLimit: 100})
	if err != nil || !res.StdoutTruncated || res.StdoutRef != "" || res.ExitCode != 0 {
		t.Fatalf("truncated output past the quota: %+v %v", res, err)
	}
	for _, art := range kept {
		if _, got, err := x.a.ReadArtifact(ctx, art.Ref, 0, 0); err != nil || got.Ref != art.Ref {
			t.Fatalf("an artifact was lost to the refused ones: %v", err)
		}
	}
	// Another tenant is not bound by a's quota.
	eb, _ := x.b.Create(ctx, client.CreateRequest{})
	x.b.WriteFile(ctx, eb.ID, "c.txt", []byte("third\n"))
	if _, err := x.b.Export(ctx, eb.ID, "c.txt"); err != nil {
		t.Fatalf("tenant b: %v", err)
	}
}

// mountsUnder lists mount points below dir in /proc/self/mountinfo.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir) {
			out = append(out, f[4])
		}
	}
	return out
}
