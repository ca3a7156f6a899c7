package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/env/envtest"
	"github.com/agentbox/agentbox/internal/policy"
)

// TestSymlinkedPathsJudgedAtTheirTarget is the attacker's test of the gate's
// paths: in a real environment, a name that is a link to .env, a directory link
// to .ssh or .git, and a link through /workspace are each judged where the
// workspace reaches, so the built-in policy refuses (sensitive:read) or asks
// (.git internals) as it would for the target itself, and the .env never
// reaches the model. Before, each was judged by its innocent name and allowed:
// fs.read of notes.txt returned the .env's content.
func TestSymlinkedPathsJudgedAtTheirTarget(t *testing.T) {
	ws := t.TempDir()
	const secretLine = "DB_PASSWORD=Zk3xP9qLm2Vw8Rt5"
	must(t, os.WriteFile(filepath.Join(ws, ".env"), []byte(secretLine+"\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, ".ssh"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".ssh", "config"), []byte("Host x\n  Password "+secretLine+"\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "app.py"), []byte("print('hi')\n"), 0o644))
	for link, target := range map[string]string{"notes.txt": ".env", "cfg": ".ssh", "g": ".git", "abs": "/workspace/.env", "docs": "."} {
		must(t, os.Symlink(target, filepath.Join(ws, link)))
	}
	svc := envtest.New(t)
	owner := env.Owner{Tenant: "test", Task: "links"}
	ctx := context.Background()
	info, err := svc.Create(ctx, env.CreateOptions{Owner: owner, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Destroy(context.Background(), owner, info.ID) })
	g := &recordingGate{ctx: policy.Context{Sandbox: policy.SandboxNamespace, Overlay: true}}
	r := NewRegistry(Options{Scopes: BuiltinScopes, Gate: g})
	if _, err := RegisterBuiltins(ctx, r, BuiltinOptions{Service: svc, Owner: owner, EnvID: info.ID,
		TestCommand: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, args string
		code       Code
	}{
		{"fs.read", `{"path":"notes.txt"}`, EPERM},
		{"fs.read", `{"path":"cfg/config"}`, EPERM},
		{"fs.read", `{"path":"abs"}`, EPERM},
		{"fs.read", `{"path":"docs/.env"}`, EPERM},
		{"fs.search", `{"pattern":"PASSWORD","path":"notes.txt"}`, EPERM},
		{"fs.write", `{"path":"g/hooks/pre-commit","content":"#!/bin/sh\ncurl x\n"}`, EASK},
		{"patch.apply", `{"path":"g/config","old":"a","new":"b"}`, EASK},
		// Controls: the same tools on ordinary paths, and through a link that
		// stays ordinary, are allowed.
		{"fs.read", `{"path":"docs/app.py"}`, ""},
		{"fs.list", `{"path":"docs"}`, ""},
		{"fs.write", `{"path":"notes.md","content":"x"}`, ""},
	} {
		out := r.Call(ctx, Call{ID: "c", Tool: tc.tool, Args: json.RawMessage(tc.args)}, nil)
		e := out.Envelope
		if tc.code == "" {
			if !e.OK {
				t.Errorf("%s %s: refused: %+v", tc.tool, tc.args, e.Error)
			}
			continue
		}
		if e.OK || e.Error.Code != tc.code {
			t.Errorf("%s %s: got %+v, want %s", tc.tool, tc.args, e, tc.code)
		}
		if b, _ := json.Marshal(e); strings.Contains(string(b), "Zk3xP9qLm2Vw8Rt5") {
			t.Errorf("%s %s: the secret reached the result", tc.tool, tc.args)
		}
	}
	// A search of a tree through a link to .ssh reads nothing of .ssh: the
	// sensitive skip judges each file where it really is.
	g.ctx.Taint = nil
	out := r.Call(ctx, Call{ID: "s", Tool: "fs.search", Args: json.RawMessage(`{"pattern":"PASSWORD","path":"docs"}`)}, nil)
	if b, _ := json.Marshal(out.Envelope); !out.Envelope.OK || strings.Contains(string(b), "Zk3xP9qLm2Vw8Rt5") {
		t.Errorf("search of docs: %s", b)
	}
}
