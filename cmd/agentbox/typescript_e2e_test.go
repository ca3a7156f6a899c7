package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// tsClient is clients/typescript, from this package's directory.
var tsClient = filepath.Join("..", "..", "clients", "typescript")

// TestTypeScriptClient: the TypeScript client (clients/typescript) is built from
// types that match api/openapi.yaml (regenerated here and compared), and its own
// tests (node --test) pass against a real daemon with its own state directory.
func TestTypeScriptClient(t *testing.T) {
	testenv.SkipShort(t, "installs and runs the Node.js client (~15 s)")
	_, errNode := exec.LookPath("node")
	_, errNpm := exec.LookPath("npm")
	testenv.Require(t, errNode == nil && errNpm == nil, "node and npm (Node.js) for the TypeScript client")
	modules := npmModules(t)

	// A copy of the client with the cached modules: the checkout stays as it is.
	work := t.TempDir()
	for _, f := range []string{"package.json", "tsconfig.json", "src/index.ts", "src/schema.d.ts", "test/client.test.js"} {
		b, err := os.ReadFile(filepath.Join(tsClient, f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(work, f)), 0o755)
		if err := os.WriteFile(filepath.Join(work, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(modules, ".bin")
	node := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
		}
		return string(out)
	}

	spec, err := filepath.Abs(filepath.Join("..", "..", "api", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	node(work, nil, filepath.Join(bin, "openapi-typescript"), spec, "-o", "regenerated.d.ts")
	regen, _ := os.ReadFile(filepath.Join(work, "regenerated.d.ts"))
	committed, _ := os.ReadFile(filepath.Join(work, "src", "schema.d.ts"))
	if len(regen) == 0 || !bytes.Equal(regen, committed) {
		t.Fatalf("clients/typescript/src/schema.d.ts is not what api/openapi.yaml generates: run `npm run generate` in clients/typescript")
	}
	node(work, nil, filepath.Join(bin, "tsc"), "-p", ".")

	d := startDaemon(t, t.TempDir())
	out := node(work, []string{"AGENTBOX_SOCKET=" + d.socket, "AGENTBOX_TOKEN=" + e2eToken, "AGENTBOX_WORKSPACE=" + filepath.Join(d.work, "proj")},
		"node", "--test", "--test-reporter=spec", "test/")
	t.Logf("node --test:\n%s", out)
	// node --test fails on any failure; a run of nothing must fail too.
	if strings.Contains(out, "pass 0") || !strings.Contains(out, "fail 0") {
		t.Fatalf("node --test ran no test or failed:\n%s", out)
	}
}

// npmModules returns node_modules installed by npm ci from the client's
// package-lock.json, cached by the lock's hash in the TMPDIR the tests started
// with (a new lock installs afresh; an install is never reused half done).
func npmModules(t *testing.T) string {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(tsClient, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	dir := filepath.Join(hostTmp, "agentbox-ts-client-"+hex.EncodeToString(sum[:8]))
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(modules); err == nil {
		return modules
	}
	stage, err := os.MkdirTemp(hostTmp, "agentbox-ts-client-stage-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(stage)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(tsClient, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(stage, f), b, 0o644)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = stage
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	// Another run may have won the race: then its copy is used.
	if err := os.Rename(stage, dir); err != nil {
		if _, serr := os.Stat(modules); serr != nil {
			t.Fatalf("cache the client's modules: %v", err)
		}
	}
	return modules
}
