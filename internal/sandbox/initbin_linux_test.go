package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// buildInit builds cmd/agentbox-init into a directory of its own with extra go
// build flags and returns its path.
func buildInit(t testing.TB, flags ...string) string {
	t.Helper()
	_, err := exec.LookPath("go")
	testenv.Require(t, err == nil, "the go toolchain builds cmd/agentbox-init")
	p := filepath.Join(t.TempDir(), nsinit.Argv0Init)
	args := append(append([]string{"build", "-o", p}, flags...), "github.com/agentbox/agentbox/cmd/agentbox-init")
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build agentbox-init: %v\n%s", err, out)
	}
	return p
}

// useInit makes Start use the init at p for the rest of the test.
func useInit(t testing.TB, p string) {
	saved := initBinary
	f, err := trustedInit(p)
	initBinary = func() (*os.File, error) { return f, err }
	t.Cleanup(func() {
		initBinary = saved
		if f != nil {
			f.Close()
		}
	})
}

// TestSeparateInit: with cmd/agentbox-init installed, the sandbox's init is that
// binary, not this one re-executed, and it runs sandboxes like the built-in init.
func TestSeparateInit(t *testing.T) {
	testenv.RequireRoot(t)
	p := buildInit(t)
	useInit(t, p)
	sb, err := Start(Config{Persistent: true}, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(sb.Pid()) + "/exe")
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(sb.Pid()) + "/comm")
	if n, err := sb.Destroy(); n != 0 || err != nil {
		t.Errorf("Destroy = %d, %v", n, err)
	}
	if err != nil || exe != p {
		t.Errorf("the init runs %q (%v), want %s", exe, err, p)
	}
	if string(comm) != nsinit.Argv0Init+"\n" {
		t.Errorf("the init's name in ps is %q, want %s", comm, nsinit.Argv0Init)
	}
	r := sh(t, "echo ok; cat /proc/self/status | grep -E '^(NoNewPrivs|Seccomp):'")
	if r.exit.ExitCode != 0 || !strings.Contains(r.stdout, "ok\n") || !strings.Contains(r.stdout, "NoNewPrivs:\t1") || !strings.Contains(r.stdout, "Seccomp:\t2") {
		t.Errorf("under agentbox-init: exit %+v, stdout %q, stderr %q", r.exit, r.stdout, r.stderr)
	}
}

// TestStaleInitRefused: an agentbox-init built from other sources (here: another
// build variant) refuses the Spec before it sets anything up, and says what to do.
func TestStaleInitRefused(t *testing.T) {
	testenv.RequireRoot(t)
	useInit(t, buildInit(t, "-ldflags=-X github.com/agentbox/agentbox/internal/sandbox/nsinit.buildVariant=stale"))
	r := runIn(t, Config{Argv: []string{"/bin/true"}})
	se, ok := r.exit.SetupErr.(*SetupError)
	if !ok || se.Stage != nsinit.StageBuild || !strings.Contains(se.Detail, "build both from one tree") {
		t.Fatalf("a stale init ran: exit %+v", r.exit)
	}
}

// TestUntrustedInitRefused: an agentbox-init that someone other than root (or the
// user running agentbox) could have written or could replace is never started;
// Start says why. A missing one means this binary is the init.
func TestUntrustedInitRefused(t *testing.T) {
	testenv.RequireRoot(t)
	install := func(t *testing.T, dirMode os.FileMode) (dir, p string) {
		dir = filepath.Join(t.TempDir(), "bin")
		if err := os.Mkdir(dir, 0o755); err != nil || os.Chmod(dir, dirMode) != nil {
			t.Fatal(err)
		}
		p = filepath.Join(dir, nsinit.Argv0Init)
		if err := os.WriteFile(p, []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir, p
	}
	if got, err := trustedInit(filepath.Join(t.TempDir(), nsinit.Argv0Init)); got != nil || err != nil {
		t.Errorf("missing init: %v, %v; want none and no error", got, err)
	}
	for _, mode := range []os.FileMode{0o755, 0o777 | os.ModeSticky} {
		_, p := install(t, mode)
		got, err := trustedInit(p)
		if got == nil || err != nil {
			t.Errorf("root's 0755 init in a directory of mode %v: %v, %v; want it", mode, got, err)
			continue
		}
		got.Close()
	}
	for _, c := range []struct {
		name string
		set  func(dir, p string) error
		want string
	}{
		{"someone else's", func(_, p string) error { return os.Chown(p, 65534, 65534) }, "owned by uid 65534"},
		{"group-writable", func(_, p string) error { return os.Chmod(p, 0o775) }, "lets group or others write"},
		{"not executable", func(_, p string) error { return os.Chmod(p, 0o644) }, "not executable"},
		{"in a directory others may write", func(dir, _ string) error { return os.Chmod(dir, 0o777) }, "bin: mode"},
		{"in someone else's directory", func(dir, _ string) error { return os.Chown(dir, 65534, 65534) }, "bin: owned by uid 65534"},
		{"a symlink", func(dir, p string) error {
			if err := os.Rename(p, p+".real"); err != nil {
				return err
			}
			return os.Symlink(p+".real", p)
		}, "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, p := install(t, 0o755)
			if err := c.set(dir, p); err != nil {
				t.Fatal(err)
			}
			got, err := trustedInit(p)
			if got != nil || err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "remove it") {
				t.Fatalf("trustedInit = %v, %v; want a refusal naming %q", got, err, c.want)
			}
			useInit(t, p)
			if sb, err := Start(Config{Argv: []string{"/bin/true"}}, Stdio{}); err == nil {
				sb.Destroy()
				t.Fatal("Start started an untrusted init")
			}
		})
	}
}

// TestInitRefusalNotKept: an init refused for its mode is accepted once an
// administrator fixes the mode, without a restart (a daemon used to keep the
// first refusal for its whole life).
func TestInitRefusalNotKept(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	p := filepath.Join(dir, nsinit.Argv0Init)
	if err := os.WriteFile(p, []byte("#!/bin/true\n"), 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o775); err != nil { // group-writable: refused
		t.Fatal(err)
	}
	var c initCache
	if f, err := c.get(p); err == nil {
		f.Close()
		t.Fatal("a group-writable init was accepted")
	}
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := c.get(p)
	if err != nil || f == nil {
		t.Fatalf("after the fix: %v, %v; want the init", f, err)
	}
	defer f.Close()
	if g, err := c.get(p); g != f || err != nil {
		t.Errorf("a second get = %v, %v; want the same file", g, err)
	}
}
