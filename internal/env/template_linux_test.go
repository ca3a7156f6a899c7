package env

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestCreateOnTemplate: an environment on a template holds the image open while
// it lives (removing the name and collecting garbage leave its layers), and
// lets go of it at destroy; templates that cannot be had are ErrInvalid.
func TestCreateOnTemplate(t *testing.T) {
	dir := t.TempDir()
	store, err := image.OpenStore(filepath.Join(dir, "images"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "img.tar")
	tag, _ := name.NewTag("example.test/t:1")
	if err := tarball.WriteToFile(archive, tag, img); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Import(context.Background(), "docker-archive:"+archive, image.ImportOptions{Name: "rand"}); err != nil {
		t.Fatal(err)
	}

	bare := newManager(t, Config{})
	for _, tc := range []struct {
		m    *Manager
		tpl  string
		want string
	}{
		{bare, "rand", "no image store"},
		{newManager(t, Config{Images: store}), "nope", `no template "nope"`},
		{newManager(t, Config{Images: store}), "Bad", `image name "Bad"`},
	} {
		_, err := tc.m.Create(context.Background(), CreateOptions{Owner: alice, Template: tc.tpl})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("template %q: %v, want ErrInvalid saying %q", tc.tpl, err, tc.want)
		}
	}

	m := newManager(t, Config{Images: store})
	info, err := m.Create(context.Background(), CreateOptions{Owner: alice, Template: "rand"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Template != "rand" {
		t.Fatalf("Info.Template %q", info.Template)
	}
	if err := store.Remove("rand"); err != nil {
		t.Fatal(err)
	}
	if res, err := store.GC(context.Background(), image.GCOptions{Cache: true}); err != nil || res.Layers != 0 {
		t.Fatalf("GC while the environment lives: %+v %v", res, err)
	}
	if err := m.Destroy(context.Background(), alice, info.ID); err != nil {
		t.Fatal(err)
	}
	if res, err := store.GC(context.Background(), image.GCOptions{Cache: true}); err != nil || res.Layers != 2 || res.Images != 1 {
		t.Fatalf("GC after destroy: %+v %v", res, err)
	}
}

// TestExecTemplateEnv: a command in an environment on a template gets the
// template's Env between the defaults and its own, as run --template does
// (environments ignored it: a task's grader on node-host had no NODE_PATH).
func TestExecTemplateEnv(t *testing.T) {
	testenv.RequireRoot(t) // the image store needs root
	store, err := image.OpenStore(filepath.Join(t.TempDir(), "images"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := image.ParseSpec([]byte("base: {host: true}\nenv: {FROM_IMAGE: image, BOTH: image, PATH: /opt/x:/usr/bin:/bin}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Build(context.Background(), spec, image.BuildOptions{Name: "withenv"}); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Config{Images: store})
	id := create(t, m, CreateOptions{Template: "withenv"}).ID
	res, err := m.Exec(context.Background(), alice, id, ExecRequest{Argv: []string{"/bin/sh", "-c", `echo "$FROM_IMAGE $BOTH $PATH"`}, Env: []string{"BOTH=request"}})
	if err != nil || res.ExitCode != 0 || res.Stdout != "image request /opt/x:/usr/bin:/bin\n" {
		t.Fatalf("Exec: %v %+v", err, res)
	}
}
