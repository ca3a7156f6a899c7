package workspace

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fataler is what the helpers need of *testing.T and *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

// snapshot describes a tree the way git sees it: every regular file with its
// executable bit and content, every symlink with its target. Directories are left
// out (git tracks no empty ones) and so is anything else.
func snapshot(t fataler, dir string) map[string]string {
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // listed but not there: a whiteout seen through an overlay
		}
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			m[rel] = "link:" + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			kind := "file:"
			if fi.Mode()&0o100 != 0 {
				kind = "exec:"
			}
			m[rel] = kind + string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return m
}

// gitApply applies patch in dir with the real git, outside any repository.
func gitApply(dir string, patch []byte) error {
	pf, err := os.CreateTemp("", "agentbox-patch-*")
	if err != nil {
		return err
	}
	defer os.Remove(pf.Name())
	pf.Write(patch)
	pf.Close()
	cmd := exec.Command("git", "apply", "--allow-empty", "--whitespace=nowarn", pf.Name())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return &gitError{err: err, out: out.String()}
	}
	return nil
}

type gitError struct {
	err error
	out string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(e.out) }

// copyTree copies src into the new directory dst, keeping symlinks and modes.
func copyTree(t fataler, src, dst string) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
}

// writeTree creates entries from a map of path to content: "->t" makes a symlink
// to t, "x:c" an executable file holding c, "/" a directory.
func writeTree(t fataler, dir string, files map[string]string) {
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatalf("%v", err)
		}
		var err error
		switch {
		case c == "/":
			err = os.MkdirAll(full, 0o755)
		case strings.HasPrefix(c, "->"):
			err = os.Symlink(c[2:], full)
		case strings.HasPrefix(c, "x:"):
			err = os.WriteFile(full, []byte(c[2:]), 0o755)
		default:
			err = os.WriteFile(full, []byte(c), 0o644)
		}
		if err != nil {
			t.Fatalf("%v", err)
		}
	}
}

// snapOf is the snapshot writeTree's map describes.
func snapOf(files map[string]string) map[string]string {
	m := map[string]string{}
	for p, c := range files {
		switch {
		case c == "/":
		case strings.HasPrefix(c, "->"):
			m[p] = "link:" + c[2:]
		case strings.HasPrefix(c, "x:"):
			m[p] = "exec:" + c[2:]
		default:
			m[p] = "file:" + c
		}
	}
	return m
}

// diffSnap lists how got differs from want, "" if not at all.
func diffSnap(want, got map[string]string) string {
	var b strings.Builder
	for k, v := range want {
		if g, ok := got[k]; !ok {
			b.WriteString("missing " + quote(k) + "\n")
		} else if g != v {
			b.WriteString("differs " + quote(k) + ": want " + quote(v) + " got " + quote(g) + "\n")
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			b.WriteString("extra " + quote(k) + "\n")
		}
	}
	return b.String()
}

// roundTrip applies patch to two copies of base, with git apply and with
// ApplyPatch, and fails unless both reproduce want. ApplyPatch refuses to create a
// symlink that points out of the workspace, which git apply creates: if want has a
// new one, ApplyPatch must fail with ErrEscape and change nothing.
func roundTrip(t fataler, base string, patch []byte, want map[string]string) {
	gitRoundTrip(t, base, patch, want)
	ourRoundTrip(t, base, patch, want)
}

// gitRoundTrip is roundTrip's half with git apply.
func gitRoundTrip(t fataler, base string, patch []byte, want map[string]string) {
	scratch, err := os.MkdirTemp(filepath.Dir(base), "rt-*")
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer os.RemoveAll(scratch)
	g := filepath.Join(scratch, "git")
	copyTree(t, base, g)
	if err := gitApply(g, patch); err != nil {
		t.Fatalf("git apply: %v\npatch:\n%s", err, patch)
	}
	if d := diffSnap(want, snapshot(t, g)); d != "" {
		t.Fatalf("git apply result differs:\n%spatch:\n%s", d, patch)
	}
}

// ourRoundTrip is roundTrip's half with ApplyPatch.
func ourRoundTrip(t fataler, base string, patch []byte, want map[string]string) {
	before := snapshot(t, base)
	scratch, err := os.MkdirTemp(filepath.Dir(base), "rt-*")
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer os.RemoveAll(scratch)
	a := filepath.Join(scratch, "ours")
	copyTree(t, base, a)
	r, err := OpenRoot(a, Options{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer r.Close()
	escapes := false
	for p, v := range want {
		if target, ok := strings.CutPrefix(v, "link:"); ok && before[p] != v && !linkStaysInside(p, target) {
			escapes = true
		}
	}
	_, err = r.ApplyPatch(patch)
	switch {
	case escapes && !errors.Is(err, ErrEscape):
		t.Fatalf("ApplyPatch created a symlink out of the workspace: %v\npatch:\n%s", err, patch)
	case escapes:
		want = before // all or nothing
	case err != nil && len(patch) > 0:
		t.Fatalf("ApplyPatch: %v\npatch:\n%s", err, patch)
	}
	if d := diffSnap(want, snapshot(t, a)); d != "" {
		t.Fatalf("ApplyPatch result differs:\n%spatch:\n%s", d, patch)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// scratchDir is a temporary directory on tmpfs (/dev/shm) when there is one, for the
// tests that create thousands of files (property, race and fuzz tests), whose
// speed on a disk filesystem varies tenfold with the machine's I/O load. Table
// tests use the default temporary directory, on a disk filesystem.
func scratchDir(t testing.TB) string {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC {
		if d, err := os.MkdirTemp("/dev/shm", "agentbox-workspace-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}
