package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestTemplateCLI drives template build (a docker archive, then a spec on it with
// a copy step, built twice), ls, inspect, rm and gc against a state directory of
// its own.
func TestTemplateCLI(t *testing.T) {
	testenv.RequireRoot(t) // the image store needs root
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	tpl := func(args ...string) (string, string, int) {
		t.Helper()
		return cli(t, append([]string{"template", "--state-dir", state}, args...)...)
	}
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "img.tar")
	if err := tarball.WriteToFile(archive, must(name.NewTag("example.test/base:1")), img); err != nil {
		t.Fatal(err)
	}
	if out, errOut, st := tpl("build", "--name", "base", "--from", "docker-archive:"+archive); st != 0 || !strings.Contains(out, "base = sha256:") || !strings.Contains(out, "2 layers") {
		t.Fatalf("build --from: status %d\n%s%s", st, out, errOut)
	}

	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\n"), 0o644)
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte("base: {image: base}\nsteps:\n  - copy: {src: hello.txt, dst: /opt/hello.txt}\nworkdir: /workspace\n"), 0o644)
	out, errOut, st := tpl("build", "--name", "app:1", "-f", spec)
	if st != 0 || !strings.Contains(out, "0 of 1 build steps cached") || !strings.Contains(errOut, "step 1/1 copy: hello.txt -> /opt/hello.txt") {
		t.Fatalf("first build: status %d\n%s%s", st, out, errOut)
	}
	if out, errOut, st = tpl("build", "--name", "app:1", "-f", spec); st != 0 || !strings.Contains(out, "1 of 1 build steps cached") {
		t.Fatalf("second build is not cached: status %d\n%s%s", st, out, errOut)
	}

	out, _, st = tpl("--json", "ls")
	var list []image.Summary
	if st != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || list[0].Name != "app:1" || list[0].Layers != 3 || list[1].Name != "base" {
		t.Fatalf("ls: status %d, %s", st, out)
	}
	out, _, st = tpl("--json", "inspect", "app:1")
	var info image.Info
	if st != 0 || json.Unmarshal([]byte(out), &info) != nil || info.Build == nil || len(info.Build.Steps) != 1 ||
		info.Build.Steps[0].Inputs == "" || len(info.Layers) != 3 || info.Config.WorkingDir != "/workspace" {
		t.Fatalf("inspect --json: status %d, %s", st, out)
	}
	if out, _, st = tpl("inspect", "app:1"); st != 0 || !strings.Contains(out, "step 1: copy: hello.txt -> /opt/hello.txt") || !strings.Contains(out, info.Layers[2].DiffID.String()) {
		t.Fatalf("inspect: status %d\n%s", st, out)
	}

	if out, errOut, st = tpl("rm", "app:1", "base"); st != 0 {
		t.Fatalf("rm: status %d\n%s%s", st, out, errOut)
	}
	// The build cache still holds the copy step's layer; --cache drops it too.
	out, _, st = tpl("--json", "gc")
	var res image.GCResult
	if st != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Images != 2 || res.Layers != 2 {
		t.Fatalf("gc: status %d, %s", st, out)
	}
	if out, _, st = tpl("--json", "gc", "--cache"); st != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Layers != 1 || res.CacheEntries != 1 {
		t.Fatalf("gc --cache: status %d, %s", st, out)
	}
	if out, _, _ = tpl("--json", "ls"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("ls after rm: %s", out)
	}
}

// TestTemplateCLIErrors: bad invocations say what is wrong and what to do.
func TestTemplateCLIErrors(t *testing.T) {
	testenv.RequireRoot(t) // the image store needs root
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	runSpec := filepath.Join(dir, "run.yaml")
	os.WriteFile(runSpec, []byte("base: {host: true}\nsteps: [{run: exit 3}]\n"), 0o644)
	badSpec := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badSpec, []byte("base: {debian: bookworm}\nsteps: [{npm: [left-pad]}]\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no name", []string{"build", "--from", "debian:bookworm"}, "give --name NAME"},
		{"bad name", []string{"build", "--name", "Py", "--from", "debian:bookworm"}, `image name "Py"`},
		{"no source", []string{"build", "--name", "x"}, "give exactly one of --from SOURCE"},
		{"both", []string{"build", "--name", "x", "--from", "debian:bookworm", "-f", runSpec}, "give exactly one of --from SOURCE"},
		{"bad source", []string{"build", "--name", "x", "--from", "docker:foo"}, "want docker-archive:FILE"},
		{"missing archive", []string{"build", "--name", "x", "--from", "docker-archive:" + filepath.Join(dir, "none.tar")}, "none.tar"},
		{"bad spec", []string{"build", "--name", "x", "-f", badSpec}, "steps[0].npm[0]"},
		{"bad prefix", []string{"build", "--name", "x", "-f", runSpec, "--allow-private", "10.1.2.3"}, `--allow-private "10.1.2.3"`},
		{"host bits", []string{"build", "--name", "x", "-f", runSpec, "--allow-private", "10.1.2.3/8"}, "did you mean 10.0.0.0/8"},
		{"missing CA file", []string{"build", "--name", "x", "-f", runSpec, "--ca-file", filepath.Join(dir, "none.pem")}, "none.pem"},
		{"CA file not PEM", []string{"build", "--name", "x", "-f", runSpec, "--ca-file", runSpec}, "not PEM"},
		{"failing step", []string{"build", "--name", "x", "-f", runSpec}, "build: step 1 (run: exit 3)"},
		{"inspect missing", []string{"inspect", "nope"}, "no such image: nope"},
		{"rm missing", []string{"rm", "nope"}, "no such image: nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, st := cli(t, append([]string{"template", "--state-dir", state}, tc.args...)...)
			if st != 125 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("status %d, stderr %q; want 125 and %q", st, errOut, tc.want)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestDaemonTemplate: the daemon serves its state directory's templates: an
// environment of tenant a created on one runs with it as its root (the layer's
// /bin/agentbox, which the host's root has not), a template's layers and
// digests show over the API, and tenant b, whose configuration allows none,
// is refused as for a missing one.
func TestDaemonTemplate(t *testing.T) {
	testenv.RequireRoot(t) // the image store needs root
	dir := t.TempDir()
	bin, err := os.ReadFile(agentbox) // static: runs on a root of its own
	if err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755})
		tw.WriteHeader(&tar.Header{Name: "bin/agentbox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))})
		tw.Write(bin)
		tw.Close()
		return io.NopCloser(&b), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "tiny.tar")
	if err := tarball.WriteToFile(archive, must(name.NewTag("example.test/tiny:1")), img); err != nil {
		t.Fatal(err)
	}
	if out, errOut, st := cli(t, "template", "--state-dir", filepath.Join(dir, "state"), "build", "--name", "tiny", "--from", "docker-archive:"+archive); st != 0 {
		t.Fatalf("template build: %d\n%s%s", st, out, errOut)
	}
	d := startDaemon(t, dir)
	ctx := t.Context()
	a := d.client(e2eToken)
	e, err := a.Create(ctx, client.CreateRequest{Workspace: filepath.Join(d.work, "proj"), Template: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Destroy(ctx, e.ID)
	res, err := a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"/bin/agentbox", "help"}})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, "The sandbox and harness") || e.Template != "tiny" {
		t.Fatalf("exec in the template's root: %+v %v (env %+v)", res, err, e)
	}
	if res, err := a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"/bin/sh", "-c", "true"}}); err != nil || res.ExitCode == 0 {
		t.Fatalf("the host's /bin/sh is visible in the template's root: %+v %v", res, err)
	}
	out, errOut, st := d.cli("env", "create", "--template", "tiny")
	if id := strings.TrimSpace(out); st != 0 || id == "" {
		t.Fatalf("env create --template tiny: %d %s %s", st, out, errOut)
	} else if _, errOut, st := d.cli("env", "rm", id); st != 0 {
		t.Fatalf("env rm: %d %s", st, errOut)
	}
	if _, errOut, st := d.cli("env", "create", "--template", "nope"); st == 0 || !strings.Contains(errOut, `no template "nope"`) {
		t.Fatalf("env create --template nope: %d %s", st, errOut)
	}
	_, err = d.client(e2eTokenB).Create(ctx, client.CreateRequest{Template: "tiny"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != client.CodeInvalid || !strings.Contains(ce.Message, `no template "tiny"`) {
		t.Fatalf("tenant b on tiny: %v", err)
	}
}

// TestServeBuildsCAFile: the daemon reads builds.ca_files when it starts and
// refuses to start on one that holds no certificate, naming the key.
func TestServeBuildsCAFile(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "site.crt"), []byte("not a certificate\n"), 0o644)
	cfg := filepath.Join(dir, "agentbox.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("socket: %s\nstate_dir: %s\nbuilds: {allow_private: [203.0.113.0/24], ca_files: [site.crt]}\n"+
		"tenants: {a: {}}\ntokens: [{token: %s, tenant: a, scopes: [admin]}]\n",
		filepath.Join(dir, "run", "agentbox.sock"), filepath.Join(dir, "state"), e2eToken)), 0o600)
	_, errOut, st := cli(t, "serve", "--config", cfg)
	if st == 0 || !strings.Contains(errOut, "builds.ca_files "+filepath.Join(dir, "site.crt")+": not PEM") {
		t.Fatalf("serve with a bad builds.ca_files: status %d, stderr %q", st, errOut)
	}
}
