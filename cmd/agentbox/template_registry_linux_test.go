package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/egress/egresstest"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestTemplateRegistries builds templates/go-host.yaml (a go_modules step: one
// small module from the Go module proxy; a run step compiling it into the
// template's build cache) and templates/node-host.yaml (an npm
// step: one package from the npm registry) from the CLI, each over the host's
// system directories, and runs a command on each that needs what its step
// fetched, offline (a run has no network). The registries may sit behind a
// TLS interceptor on a reserved address (this machine's do): the build names
// the addresses they resolve to with --allow-private, and the host base's
// bundle trusts the interceptor.
func TestTemplateRegistries(t *testing.T) {
	testenv.SkipShort(t, "fetches a Go module and an npm package from their registries")
	testenv.RequireRoot(t)
	_, err := exec.LookPath("npm")
	testenv.Require(t, err == nil, "npm on the host (apt-get install npm)")
	_, err = os.Stat("/usr/local/go/bin/go")
	testenv.Require(t, err == nil, "Go in /usr/local/go, which templates/go-host.yaml puts in PATH")
	state := t.TempDir()
	build := func(name, spec, registry string, steps int) {
		t.Helper()
		args := []string{"template", "--state-dir", state, "build", "--name", name, "-f", filepath.Join("..", "..", "templates", spec)}
		for _, p := range egresstest.ReservedPrefixes(t, registry) {
			args = append(args, "--allow-private", p.String())
		}
		out, errOut, st := cli(t, args...)
		if st != 0 || !strings.Contains(out, fmt.Sprintf("0 of %d build steps cached", steps)) {
			t.Fatalf("template build %s: status %d\n%s%s", name, st, out, errOut)
		}
		if out, errOut, st = cli(t, args...); st != 0 || !strings.Contains(out, fmt.Sprintf("%d of %d build steps cached", steps, steps)) {
			t.Fatalf("template build %s again is not cached: status %d\n%s%s", name, st, out, errOut)
		}
	}
	build("go-host", "go-host.yaml", "proxy.golang.org", 2)
	build("node-host", "node-host.yaml", "registry.npmjs.org", 1)

	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.test/m\n\ngo 1.21\n\nrequire github.com/google/go-cmp v0.6.0\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/google/go-cmp/cmp\"\n)\n\nfunc main() { fmt.Println(cmp.Diff(1, 2) != \"\") }\n"), 0o644)
	out, errOut, st := cli(t, "run", "--state-dir", state, "--template", "go-host", "--workspace", ws, "--",
		"sh", "-c", "GOFLAGS=-mod=mod GOPROXY=off GOCACHE=/tmp/gocache go run .")
	if st != 0 || out != "true\n" {
		t.Errorf("go run on go-host, offline: status %d, stdout %q\n%s", st, out, errOut)
	}
	// The template's build cache has go-cmp and the standard library compiled:
	// a build compiles only the workspace's package.
	out, errOut, st = cli(t, "run", "--state-dir", state, "--template", "go-host", "--workspace", ws, "--",
		"sh", "-c", "GOFLAGS=-mod=mod GOPROXY=off go build -v -o /dev/null . 2>&1")
	if st != 0 || out != "example.test/m\n" {
		t.Errorf("go build on go-host compiled more than the workspace's package: status %d, output %q\n%s", st, out, errOut)
	}
	out, errOut, st = cli(t, "run", "--state-dir", state, "--template", "node-host", "--workspace", ws, "--",
		"node", "-e", `console.log(require("left-pad")("x", 3, "-"))`)
	if st != 0 || out != "--x\n" {
		t.Errorf("node on node-host, offline: status %d, stdout %q\n%s", st, out, errOut)
	}
	// The module is the template's, not the host's: without the template the
	// same command finds no module (GOPROXY=off).
	out, errOut, st = cli(t, "run", "--workspace", ws, "--env", "PATH=/usr/local/go/bin:/usr/bin:/bin", "--",
		"sh", "-c", "GOFLAGS=-mod=mod GOPROXY=off GOCACHE=/tmp/gocache GOMODCACHE=/tmp/mod go run .")
	if st == 0 {
		t.Errorf("go run on the host root found the module: stdout %q\n%s", out, errOut)
	}
}
