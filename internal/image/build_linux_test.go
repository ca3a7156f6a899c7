package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// fakeRunner stands in for the build sandbox, for the tests of Build's cache
// logic only (the real runner is the sandbox integration's): for a step it
// writes steps/<n> saying what ran on how many layers, and for "run: rm X" a
// whiteout of X, owned as the build sandbox's root's files are.
type fakeRunner struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeRunner) RunStep(ctx context.Context, root Root, st Step, upper, work string) error {
	f.mu.Lock()
	f.calls = append(f.calls, st.String())
	n := len(f.calls)
	f.mu.Unlock()
	if st.Run == "fail" {
		return errors.New("the step failed")
	}
	if err := os.MkdirAll(filepath.Join(upper, "steps"), 0o755); err != nil {
		return err
	}
	p := filepath.Join(upper, "steps", fmt.Sprint(n))
	body := fmt.Sprintf("%s on %d layers, env %v", st, len(root.Layers), root.Env)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		return err
	}
	for _, q := range []string{filepath.Join(upper, "steps"), p} {
		if err := os.Lchown(q, IDBase, IDBase); err != nil {
			return err
		}
	}
	if x, ok := strings.CutPrefix(st.Run, "rm "); ok {
		return unix.Mknod(filepath.Join(upper, x), unix.S_IFCHR, 0)
	}
	return nil
}

func (f *fakeRunner) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// buildFixture is a store with a base image "base" (etc/os, x/file) and a spec
// directory holding app/.
func buildFixture(t *testing.T) (*Store, string) {
	s := newStore(t)
	img := imageOf(t, v1.Config{Env: []string{"PATH=/usr/bin:/bin"}}, layerOf(t, mkTar(t, reg("etc/os", "test"), reg("x/file", "base's"))))
	if _, err := s.Import(t.Context(), writeDockerArchive(t, img), ImportOptions{Name: "base"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "app", "data"), 0o755)
	os.WriteFile(filepath.Join(dir, "app", "main.py"), []byte("print('hi')\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "app", "data", "d.txt"), []byte("data"), 0o600)
	os.Symlink("main.py", filepath.Join(dir, "app", "link.py"))
	return s, dir
}

func buildSpec(apt ...string) *Spec {
	return &Spec{
		Base: Base{Image: "base"},
		Steps: []Step{
			{Copy: &Copy{Src: "app", Dst: "/opt/app"}},
			{Run: "make a"},
			{Apt: apt},
			{Run: "rm x"},
		},
		Env:     map[string]string{"LANG": "C.UTF-8"},
		Workdir: "/opt/app",
	}
}

func cachedFlags(r *Record) []bool {
	var out []bool
	for _, st := range r.Build.Steps {
		out = append(out, st.Cached)
	}
	return out
}

// TestBuildCache: a step runs again only if it, its inputs, or a step before it
// changed; an unchanged spec is the same image.
func TestBuildCache(t *testing.T) {
	s, dir := buildFixture(t)
	run := &fakeRunner{}
	opts := BuildOptions{Name: "t", Dir: dir, Runner: run}
	r1, err := s.Build(t.Context(), buildSpec("python3"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := run.take(); !slices.Equal(c, []string{"run: make a", "apt: python3", "run: rm x"}) {
		t.Errorf("first build ran %q", c)
	}
	if len(r1.Layers) != 5 || slices.Contains(cachedFlags(r1), true) {
		t.Errorf("first build: %d layers, cached %v", len(r1.Layers), cachedFlags(r1))
	}

	r2, err := s.Build(t.Context(), buildSpec("python3"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := run.take(); len(c) != 0 || r2.ID != r1.ID {
		t.Errorf("unchanged spec ran %q; id %s, want %s", c, r2.ID, r1.ID)
	}

	r3, err := s.Build(t.Context(), buildSpec("python3", "git"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := run.take(); !slices.Equal(c, []string{"apt: python3 git", "run: rm x"}) {
		t.Errorf("changed step 3 ran %q", c)
	}
	if f := cachedFlags(r3); !slices.Equal(f, []bool{true, true, false, false}) {
		t.Errorf("changed step 3: cached %v", f)
	}

	// A copied file's content is an input: changing it rebuilds from the copy.
	os.WriteFile(filepath.Join(dir, "app", "main.py"), []byte("print('changed')\n"), 0o644)
	r4, err := s.Build(t.Context(), buildSpec("python3"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := run.take(); len(c) != 3 || cachedFlags(r4)[0] {
		t.Errorf("changed input ran %q, cached %v", c, cachedFlags(r4))
	}
	if r4.Build.Steps[0].Inputs == r1.Build.Steps[0].Inputs {
		t.Error("the copy step's inputs digest did not change")
	}

	// So does env, which every step sees.
	sp := buildSpec("python3")
	sp.Env["LANG"] = "C"
	if _, err := s.Build(t.Context(), sp, opts); err != nil {
		t.Fatal(err)
	}
	if c := run.take(); len(c) != 3 {
		t.Errorf("changed env ran %q", c)
	}
	if _, err := s.Build(t.Context(), buildSpec("python3"), BuildOptions{Dir: dir, Runner: run, NoCache: true}); err != nil {
		t.Fatal(err)
	}
	if c := run.take(); len(c) != 3 {
		t.Errorf("NoCache ran %q", c)
	}
}

// TestBuildResult: the built image has the copied files, the steps' layers, the
// whiteout a step made, and the spec's env and workdir.
func TestBuildResult(t *testing.T) {
	s, dir := buildFixture(t)
	if _, err := s.Build(t.Context(), buildSpec("python3"), BuildOptions{Name: "t", Dir: dir, Runner: &fakeRunner{}}); err != nil {
		t.Fatal(err)
	}
	im, err := s.Open("t")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	dirs := make([]string, len(im.Layers))
	for i, l := range im.Layers {
		dirs[i] = l.Dir
	}
	if b, err := readMerged(dirs, "opt/app/main.py", 1<<20); err != nil || string(b) != "print('hi')\n" {
		t.Errorf("copied file: %q, %v", b, err)
	}
	if b, err := readMerged(dirs, "opt/app/data/d.txt", 1<<20); err != nil || string(b) != "data" {
		t.Errorf("copied file: %q, %v", b, err)
	}
	st := lstat(t, filepath.Join(im.Layers[1].Dir, "opt/app/data/d.txt"))
	if st.Uid != IDBase || st.Mode&0o777 != 0o600 {
		t.Errorf("copied file: owner %d mode %o, want the image's root and 0600", st.Uid, st.Mode&0o777)
	}
	if l, err := os.Readlink(filepath.Join(im.Layers[1].Dir, "opt/app/link.py")); err != nil || l != "main.py" {
		t.Errorf("copied symlink: %q, %v", l, err)
	}
	if b, err := readMerged(dirs, "steps/2", 1<<20); err != nil || !strings.Contains(string(b), "apt: python3 on 3 layers") || !strings.Contains(string(b), "LANG=C.UTF-8") {
		t.Errorf("step output: %q, %v", b, err)
	}
	if _, err := readMerged(dirs[:1], "x/file", 1<<20); err != nil {
		t.Fatalf("base layer: %v", err)
	}
	if _, err := readMerged(dirs, "x/file", 1<<20); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("x/file after the step removed x: %v", err)
	}
	if !slices.Contains(im.Config.Env, "LANG=C.UTF-8") || !slices.Contains(im.Config.Env, "PATH=/usr/bin:/bin") || im.Config.WorkingDir != "/opt/app" {
		t.Errorf("config %+v", im.Config)
	}
	info, err := s.Inspect("t")
	if err != nil {
		t.Fatal(err)
	}
	if info.Build == nil || len(info.Build.Steps) != 4 || !strings.HasPrefix(info.Build.Base, "base = sha256:") || info.Source != "build" {
		t.Errorf("build record %+v", info.Build)
	}
}

// TestBuildWithoutRunner: steps that run commands need a Runner and say so; a
// copy-only spec needs none.
func TestBuildWithoutRunner(t *testing.T) {
	s, dir := buildFixture(t)
	_, err := s.Build(t.Context(), buildSpec("python3"), BuildOptions{Dir: dir})
	if !errors.Is(err, ErrNoRunner) || !strings.Contains(err.Error(), "step 2 (run: make a)") {
		t.Errorf("err = %v, want ErrNoRunner naming step 2", err)
	}
	r, err := s.Build(t.Context(), &Spec{Base: Base{Image: "base"}, Steps: []Step{{Copy: &Copy{Src: "app/main.py", Dst: "/srv/main.py"}}}}, BuildOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := readMerged(s.layerDirs(r.Layers), "srv/main.py", 1<<20); err != nil || string(b) != "print('hi')\n" {
		t.Errorf("copied file: %q, %v", b, err)
	}
	if _, err := s.Build(t.Context(), &Spec{Base: Base{Image: "base"}, Steps: []Step{{Run: "fail"}}}, BuildOptions{Dir: dir, Runner: &fakeRunner{}}); err == nil || !strings.Contains(err.Error(), "the step failed") {
		t.Errorf("failing step: %v", err)
	}
	if _, err := s.Build(t.Context(), &Spec{Base: Base{Image: "base"}, Steps: []Step{{Copy: &Copy{Src: "missing", Dst: "/x"}}}}, BuildOptions{Dir: dir}); err == nil {
		t.Error("copy of a missing file built")
	}
	tmpEmpty(t, s)
}

// TestGCKeepsBuildCache: cached step layers survive GC until the cache is
// dropped.
func TestGCKeepsBuildCache(t *testing.T) {
	s, dir := buildFixture(t)
	if _, err := s.Build(t.Context(), buildSpec("python3"), BuildOptions{Name: "t", Dir: dir, Runner: &fakeRunner{}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"t", "base"} {
		if err := s.Remove(n); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.GC(t.Context(), GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Layers != 1 || layerCount(t, s) != 4 {
		t.Errorf("GC %+v, %d layers left; want only the base's layer freed", res, layerCount(t, s))
	}
	run := &fakeRunner{}
	s.setName("base", mustImport(t, s))
	if _, err := s.Build(t.Context(), buildSpec("python3"), BuildOptions{Dir: dir, Runner: run}); err != nil {
		t.Fatal(err)
	}
	if c := run.take(); len(c) != 0 {
		t.Errorf("after GC the build ran %q, want all cached", c)
	}
	for _, n := range []string{"base"} {
		s.Remove(n)
	}
	if res, err = s.GC(t.Context(), GCOptions{Cache: true}); err != nil || res.CacheEntries != 4 || layerCount(t, s) != 0 {
		t.Errorf("GC with the cache: %+v, %v, %d layers left", res, err, layerCount(t, s))
	}
}

func mustImport(t *testing.T, s *Store) v1.Hash {
	img := imageOf(t, v1.Config{Env: []string{"PATH=/usr/bin:/bin"}}, layerOf(t, mkTar(t, reg("etc/os", "test"), reg("x/file", "base's"))))
	r, err := s.Import(t.Context(), writeDockerArchive(t, img), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}
