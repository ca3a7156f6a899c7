package landlock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
	"github.com/google/go-cmp/cmp"
	gll "github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// The outcome of every probe without Landlock. Probes not listed succeed.
var control = map[string]string{
	"ioctl-new-dev": "ENOTTY", // /dev/null is no terminal: the ioctl reached the driver
	"ioctl-old-dev": "ENOTTY",
}

// denied are the outcomes at ABI 7 for sandboxRuleset.
var denied = map[string]string{
	"create-outside":      "EACCES",
	"write-outside":       "EACCES",
	"truncate-outside":    "EACCES",
	"rename-out":          "EACCES",
	"link-out":            "EACCES",
	"link-in":             "EXDEV", // REFER: a read-only file linked into ReadWrite would become writable
	"mkdir-outside":       "EACCES",
	"remove-outside":      "EACCES",
	"reopen-proc-fd":      "EACCES", // reopening a read-only fd for writing via /proc goes through open
	"sh-outside":          "exit 2",
	"devzero-write":       "EACCES", // not in ReadWriteFiles
	"ioctl-new-dev":       "EACCES", // IOCTL_DEV handled, granted nowhere
	"ioctl-old-dev":       "ENOTTY", // limit: an fd opened before Restrict keeps its rights
	"tcp-connect":         "EACCES",
	"tcp-bind":            "EACCES",
	"signal-parent-0":     "EPERM",
	"signal-parent-usr1":  "EPERM",
	"abstract-connect":    "EPERM",
	"thread-pre-restrict": "EACCES",
	// Not listed, so "ok": writes inside A, A2 and /dev/null, renames between them,
	// exec, a shell, the write through an fd opened before Restrict (a limit), MPTCP
	// (a limit: seccomp's job), signals and abstract sockets within the domain.
}

func sandboxRuleset(a, a2 string) Ruleset {
	return Ruleset{
		ReadExec:          []string{"/"},
		ReadWrite:         []string{a, a2},
		ReadWriteFiles:    []string{"/dev/null"},
		ScopeSignals:      true,
		ScopeAbstractUnix: true,
	}
}

// hostEffects tell, from outside the victim, whether a probe changed anything.
var hostEffects = map[string]func(a, a2, b string) bool{
	"write-inside":        func(a, a2, b string) bool { return exists(a, "new") },
	"rename-within-rw":    func(a, a2, b string) bool { return exists(a, "s2/f") },
	"rename-rw-to-rw":     func(a, a2, b string) bool { return exists(a2, "f2") },
	"create-outside":      func(a, a2, b string) bool { return exists(b, "new") },
	"write-outside":       func(a, a2, b string) bool { return !original(b, "write") },
	"truncate-outside":    func(a, a2, b string) bool { return !original(b, "trunc") },
	"rename-out":          func(a, a2, b string) bool { return exists(b, "moveme") || !exists(a, "moveme") },
	"link-out":            func(a, a2, b string) bool { return exists(b, "linkme") },
	"link-in":             func(a, a2, b string) bool { return exists(a, "linked") },
	"mkdir-outside":       func(a, a2, b string) bool { return exists(b, "dir") },
	"remove-outside":      func(a, a2, b string) bool { return !exists(b, "removeme") },
	"reopen-proc-fd":      func(a, a2, b string) bool { return !original(b, "reopen") },
	"old-fd-write":        func(a, a2, b string) bool { return !original(b, "oldfd") },
	"sh-inside":           func(a, a2, b string) bool { return exists(a, "sh") && exists(a, "fifo") },
	"sh-outside":          func(a, a2, b string) bool { return exists(b, "sh") },
	"thread-pre-restrict": func(a, a2, b string) bool { return exists(b, "thread") },
}

func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

func original(dir, name string) bool {
	b, err := os.ReadFile(filepath.Join(dir, name))
	return err == nil && string(b) == "original"
}

// TestRestrict re-executes the test binary as a victim under each ruleset and checks
// every probe's outcome in the victim and its effect on the host.
func TestRestrict(t *testing.T) {
	testenv.Require(t, ABI() >= 1, "Landlock enabled in the kernel")
	usr1 := make(chan os.Signal, 4)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)

	full := Applied{ABI: 7, Refer: true, Truncate: true, IoctlDev: true, Net: true, ScopeSignals: true, ScopeAbstractUnix: true}
	tests := []struct {
		name     string
		restrict bool
		exec     bool // restrict with Exec instead of Restrict
		abi      int  // 0: Restrict at the kernel's best ABI
		minABI   int
		mutate   func(r *Ruleset, tcpPort uint16)
		applied  Applied
		want     []map[string]string // merged in order over "all ok"
	}{
		{name: "control without landlock", want: []map[string]string{control}},
		{name: "abi 7", restrict: true, abi: 7, minABI: 7, applied: full,
			want: []map[string]string{control, denied}},
		{name: "best abi", restrict: true, minABI: 7, applied: withABI(full, ABI()),
			want: []map[string]string{control, denied}},
		// One thread restricted, then execve: all threads share one domain.
		{name: "exec at best abi", restrict: true, exec: true, minABI: 7, applied: withABI(full, ABI()),
			want: []map[string]string{control, denied}},
		{name: "abi 7 listed ports", restrict: true, abi: 7, minABI: 7, applied: full,
			mutate: func(r *Ruleset, port uint16) { r.AllowTCPBind, r.AllowTCPConnect = []uint16{0}, []uint16{port} },
			want:   []map[string]string{control, denied, {"tcp-connect": "ok", "tcp-bind": "ok"}}},
		{name: "abi 7 AllowAllTCP", restrict: true, abi: 7, minABI: 7, applied: with(full, func(a *Applied) { a.Net = false }),
			mutate: func(r *Ruleset, _ uint16) { r.AllowAllTCP = true },
			want:   []map[string]string{control, denied, {"tcp-connect": "ok", "tcp-bind": "ok"}}},
		{name: "abi 7 no scopes", restrict: true, abi: 7, minABI: 7,
			applied: with(full, func(a *Applied) { a.ScopeSignals, a.ScopeAbstractUnix = false, false }),
			mutate:  func(r *Ruleset, _ uint16) { r.ScopeSignals, r.ScopeAbstractUnix = false, false },
			want: []map[string]string{control, denied,
				{"signal-parent-0": "ok", "signal-parent-usr1": "ok", "abstract-connect": "ok"}}},
		{name: "downgraded to abi 3", restrict: true, abi: 3, minABI: 3, applied: Applied{ABI: 3, Refer: true, Truncate: true},
			want: []map[string]string{control, denied, {"tcp-connect": "ok", "tcp-bind": "ok", "ioctl-new-dev": "ENOTTY",
				"signal-parent-0": "ok", "signal-parent-usr1": "ok", "abstract-connect": "ok"}}},
		{name: "downgraded to abi 1", restrict: true, abi: 1, minABI: 1, applied: Applied{ABI: 1},
			want: []map[string]string{control, denied, {"tcp-connect": "ok", "tcp-bind": "ok", "ioctl-new-dev": "ENOTTY",
				"signal-parent-0": "ok", "signal-parent-usr1": "ok", "abstract-connect": "ok",
				// ABI 1 cannot tell renames apart: every cross-directory one is denied.
				"rename-within-rw": "EXDEV", "rename-rw-to-rw": "EXDEV",
				// ABI 1 does not handle truncate: the host file is truncated.
				"truncate-outside": "ok"}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.restrict {
				testenv.Require(t, ABI() >= tt.minABI, fmt.Sprintf("Landlock ABI >= %d (kernel offers %d)", tt.minABI, ABI()))
			}
			root := t.TempDir()
			a, a2, b := filepath.Join(root, "a"), filepath.Join(root, "a2"), filepath.Join(root, "b")
			setupDirs(t, a, a2, b)

			tcp, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer tcp.Close()
			abstract := fmt.Sprintf("agentbox-landlock-test-%d-%d", os.Getpid(), i)
			abs, err := net.Listen("unix", "@"+abstract)
			if err != nil {
				t.Fatal(err)
			}
			defer abs.Close()

			port := uint16(tcp.Addr().(*net.TCPAddr).Port)
			r := sandboxRuleset(a, a2)
			if tt.mutate != nil {
				tt.mutate(&r, port)
			}
			want := map[string]string{"mptcp-connect": mptcpOutcome()}
			for name := range hostEffects {
				want[name] = "ok"
			}
			for _, m := range tt.want {
				maps.Copy(want, m)
			}
			// go-landlock issue 36: below ABI 8, libpsx gives every OS thread its own
			// domain, so scopes also separate the threads of the restricted process.
			if ABI() < 8 && !tt.exec && tt.applied.ScopeSignals {
				want["signal-child-other-thread"] = "EPERM"
			}
			if ABI() < 8 && !tt.exec && tt.applied.ScopeAbstractUnix {
				want["abstract-other-thread"] = "EPERM"
			}
			for len(usr1) > 0 {
				<-usr1
			}

			res := runVictimProcess(t, victimSpec{Restrict: tt.restrict, Exec: tt.exec, ABI: tt.abi, Ruleset: r,
				A: a, A2: a2, B: b, TCPPort: int(port), Abstract: abstract, Parent: os.Getpid()})

			if tt.restrict && !tt.exec {
				t.Logf("Restrict took %v: %v", res.Took, res.Applied)
			}
			if d := cmp.Diff(tt.applied, res.Applied); d != "" {
				t.Errorf("Applied mismatch (-want +got):\n%s", d)
			}
			got := res.Probes
			for name := range got {
				if _, ok := want[name]; !ok {
					want[name] = "ok"
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("probe outcomes (-want +got):\n%s", d)
			}
			for name, changed := range hostEffects {
				if got, want := changed(a, a2, b), want[name] == "ok"; got != want {
					t.Errorf("%s: host changed = %v, want %v", name, got, want)
				}
			}
			wantSignal := want["signal-parent-usr1"] == "ok"
			wait := 100 * time.Millisecond
			if wantSignal {
				wait = 5 * time.Second
			}
			select {
			case <-usr1:
				if !wantSignal {
					t.Errorf("parent received SIGUSR1 from the victim")
				}
			case <-time.After(wait):
				if wantSignal {
					t.Errorf("parent never received SIGUSR1")
				}
			}
		})
	}
}

func withABI(a Applied, abi int) Applied {
	a.ABI = abi
	a.ResolveUnix = abi >= 9
	return a
}

func with(a Applied, f func(*Applied)) Applied {
	f(&a)
	return a
}

func setupDirs(t *testing.T, a, a2, b string) {
	t.Helper()
	for _, d := range []string{a, a2, b, filepath.Join(a, "s1"), filepath.Join(a, "s2")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/s1/f", "a/f2", "a/moveme", "a/linkme",
		"b/write", "b/trunc", "b/ro", "b/reopen", "b/removeme", "b/oldfd"} {
		if err := os.WriteFile(filepath.Join(filepath.Dir(a), f), []byte("original"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mptcpOutcome is what an MPTCP socket gets here. Landlock does not restrict MPTCP,
// so the victim gets the same under every ruleset; the seccomp filter closes this.
func mptcpOutcome() string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
	if err != nil {
		return outcome(err)
	}
	unix.Close(fd)
	return "ok"
}

func runVictimProcess(t *testing.T, spec victimSpec) victimResult {
	t.Helper()
	out := runVictimRaw(t, spec)
	var res victimResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("victim output %q: %v", out, err)
	}
	if res.Err != "" {
		t.Fatalf("victim: Restrict: %s", res.Err)
	}
	return res
}

// runVictimRaw runs the test binary as the victim and returns its stdout.
func runVictimRaw(t *testing.T, spec victimSpec) string {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), victimEnv+"="+string(js))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("victim: %v\nstderr:\n%s", err, stderr.String())
	}
	return stdout.String()
}

// TestFailClosed: with no Landlock, Restrict refuses unless BestEffort. ABI 0 is
// simulated, so nothing is enforced on the test process.
func TestFailClosed(t *testing.T) {
	r := Ruleset{ReadExec: []string{"/"}}
	if a, err := restrictAt(r, 0); !errors.Is(err, ErrUnsupported) || a != (Applied{}) {
		t.Errorf("restrictAt(abi 0) = %v, %v; want ErrUnsupported", a, err)
	}
	r.BestEffort = true
	if a, err := restrictAt(r, 0); err != nil || a != (Applied{}) {
		t.Errorf("restrictAt(abi 0, BestEffort) = %v, %v; want zero Applied, nil", a, err)
	}
	// An invalid ruleset is an error even with BestEffort, before anything is enforced.
	r.ReadWrite = []string{"/nonexistent/agentbox-landlock"}
	for _, abi := range []int{0, ABI()} {
		if _, err := restrictAt(r, abi); !errors.Is(err, ErrInvalid) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("restrictAt(abi %d) with a missing path = %v, want ErrInvalid and fs.ErrNotExist", abi, err)
		}
	}
}

// TestABIAgreesWithGoLandlock: go-landlock must accept a ruleset handling all of
// ABI()'s rights and refuse the next ABI, or Restrict would fail (or do less) than
// Applied says. Rulesets are created, never enforced.
func TestABIAgreesWithGoLandlock(t *testing.T) {
	abi := ABI()
	testenv.Require(t, abi >= 1, "Landlock enabled in the kernel")
	presets := []gll.Config{gll.V1, gll.V2, gll.V3, gll.V4, gll.V5, gll.V6, gll.V7, gll.V8, gll.V9, gll.V10, gll.V11}
	if fd, _, err := presets[abi-1].NewRulesetFD(); err != nil {
		t.Errorf("go-landlock refuses ABI %d: %v", abi, err)
	} else {
		unix.Close(fd)
	}
	if next := nextStricterABI(abi); next <= maxABI {
		if fd, _, err := presets[next-1].NewRulesetFD(); err == nil {
			unix.Close(fd)
			t.Errorf("go-landlock accepts ABI %d, but ABI() = %d", next, abi)
		}
	}
}

// nextStricterABI is the first ABI above abi that handles more (ABI 8 only adds
// TSYNC, so a V8 ruleset loads on an ABI 7 kernel); maxABI+1 if none.
func nextStricterABI(abi int) int {
	r := Ruleset{ReadExec: []string{"/"}, ScopeSignals: true, ScopeAbstractUnix: true}
	for next := abi + 1; next <= maxABI; next++ {
		p, q := build(r, abi), build(r, next)
		if p.fs != q.fs || p.net != q.net || p.scoped != q.scoped {
			return next
		}
	}
	return maxABI + 1
}

// TestBuiltRulesetsLoad creates (never enforces) the ruleset for every ABI up to the
// kernel's, so each plan is checked by the kernel: rights on the right kind of file,
// nothing beyond what the ABI handles.
func TestBuiltRulesetsLoad(t *testing.T) {
	testenv.Require(t, ABI() >= 1, "Landlock enabled in the kernel")
	r := sandboxRuleset(t.TempDir(), "/tmp")
	r.ReadWriteFiles = []string{"/dev/null", "/dev/zero", "/dev/full"}
	r.AllowTCPBind, r.AllowTCPConnect = []uint16{0, 8080}, []uint16{443}
	for abi := 1; abi <= ABI(); abi++ {
		p := build(r, abi)
		fd, _, err := p.config().NewRulesetFD(p.rules()...)
		if err != nil {
			t.Errorf("abi %d: %v", abi, err)
			continue
		}
		unix.Close(fd)
	}
	if next := nextStricterABI(ABI()); next <= maxABI {
		p := build(r, next)
		if fd, _, err := p.config().NewRulesetFD(p.rules()...); err == nil {
			unix.Close(fd)
			t.Errorf("abi %d above the kernel's was accepted", next)
		}
	}
}

// TestPreview reports without enforcing: the test process stays unrestricted.
func TestPreview(t *testing.T) {
	testenv.Require(t, ABI() >= 1, "Landlock enabled in the kernel")
	dir := t.TempDir()
	r := sandboxRuleset(dir, dir)
	got, err := Preview(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := build(r, ABI()).applied(); got != want {
		t.Errorf("Preview = %v, want %v", got, want)
	}
	if err := os.WriteFile(filepath.Join(os.TempDir(), fmt.Sprintf("agentbox-landlock-preview-%d", os.Getpid())), nil, 0o600); err != nil {
		t.Errorf("Preview restricted the test process: %v", err)
	}
	os.Remove(filepath.Join(os.TempDir(), fmt.Sprintf("agentbox-landlock-preview-%d", os.Getpid())))
	r.ReadExec = nil
	if _, err := Preview(r); !errors.Is(err, ErrInvalid) {
		t.Errorf("Preview(empty ReadExec) = %v, want ErrInvalid", err)
	}
}
