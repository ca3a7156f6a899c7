package attack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// tools holds what TestMain built once for every test.
var tools struct {
	dir         string // world-readable temp dir holding both binaries
	agentbox    string // path of the agentbox binary
	attacker    string // path of the static attacker binary
	agentboxErr error  // why agentbox is unusable (build failed or the probe run failed)
	attackerErr error  // why the attacker is unusable
}

func TestMain(m *testing.M) {
	nsinit.MaybeRun() // environments (package env) re-execute the test binary as their init
	if os.Getenv(ownMountsEnv) == "" && os.Geteuid() == 0 {
		os.Exit(inOwnMountNamespace())
	}
	if os.Getenv(ownMountsEnv) != "" {
		// Shared, as on a systemd host: a sandbox mount that failed to be private
		// would propagate here, where TestEscape_MountPropagation looks.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SHARED, ""); err != nil {
			fmt.Fprintf(os.Stderr, "attack: make / rshared: %v\n", err)
			os.Exit(1)
		}
	}
	os.Exit(testMain(m))
}

// ownMountsEnv marks the test binary re-executed in a mount namespace of its own.
const ownMountsEnv = "AGENTBOX_ATTACK_OWN_MOUNTS"

// inOwnMountNamespace runs the tests again in a new mount namespace, a private copy
// of the host's, and returns their exit status. The host's mount table changes
// while they run (other test binaries and agentbox processes mount and unmount);
// this one changes only by what these tests and the agentbox runs they start do.
func inOwnMountNamespace() int {
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), ownMountsEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Go makes / recursively private in the child before exec.
	cmd.SysProcAttr = &unix.SysProcAttr{Unshareflags: unix.CLONE_NEWNS, Pdeathsig: unix.SIGKILL}
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "attack: re-execute in a mount namespace of its own: %v\n", err)
		return 1
	}
	return 0
}

func testMain(m *testing.M) int {
	// Orphans of agentbox (processes that escaped its cleanup and lost their parent)
	// are reparented to us instead of the host's init, so the final check sees them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "attack: PR_SET_CHILD_SUBREAPER: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "agentbox-attack-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "attack: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The attacker runs as uid 1000 in the controls and its copies are executed by
	// unprivileged victims: the directory must be traversable.
	os.Chmod(dir, 0o755)
	tools.dir = dir
	buildTools()
	if testenv.InCI() {
		for _, e := range []error{tools.attackerErr, tools.agentboxErr} {
			if e != nil {
				fmt.Fprintf(os.Stderr, "attack: required under CI=true: %v\n", e)
				return 1
			}
		}
	}
	code := m.Run()
	if err := checkOrphans(); err != nil {
		fmt.Fprintf(os.Stderr, "attack: FAIL: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// moduleRoot finds the directory of go.mod above the package directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the agentbox module")
	}
	return filepath.Dir(gomod), nil
}

func buildTools() {
	root, err := moduleRoot()
	if err != nil {
		tools.attackerErr, tools.agentboxErr = err, err
		return
	}
	build := func(out, pkg string) error {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
		}
		return nil
	}
	tools.attacker = filepath.Join(tools.dir, "attacker")
	tools.attackerErr = build(tools.attacker, "./internal/attack/attacker")
	tools.agentbox = filepath.Join(tools.dir, "agentbox")
	if tools.agentboxErr = build(tools.agentbox, "./cmd/agentbox"); tools.agentboxErr != nil {
		return
	}
	tools.agentboxErr = probeSandbox()
}

// probeSandbox checks that `agentbox run` works at all with namespace isolation, so
// that a broken build shows up as one clear reason instead of 60 confusing failures.
func probeSandbox() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tools.agentbox, "run", "--json", "--isolation", "namespace", "--", "/bin/true")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var r Result
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		return fmt.Errorf("agentbox run --isolation namespace -- /bin/true: %v (%v); stdout %q; stderr %q", err, jerr, out, stderr.String())
	}
	if r.ExitCode != 0 || r.Isolation != "namespace" || r.Error != "" {
		return fmt.Errorf("agentbox run --isolation namespace -- /bin/true: exit %d, isolation %q, error %q; stderr %q", r.ExitCode, r.Isolation, r.Error, stderr.String())
	}
	return nil
}

// requireAttacker is for control runs: they need the attacker binary but no sandbox.
func requireAttacker(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.Require(t, tools.attackerErr == nil, fmt.Sprintf("attacker build: %v", tools.attackerErr))
}

// requireSandbox is for every run under agentbox.
func requireSandbox(t *testing.T) {
	t.Helper()
	requireAttacker(t)
	testenv.Require(t, tools.agentboxErr == nil, fmt.Sprintf("agentbox with --isolation namespace: %v", tools.agentboxErr))
}

// checkOrphans fails the package if a process was reparented to us (we are a child
// subreaper) and is still alive: something agentbox started outlived its run. Dead
// orphans (zombies) are reaped: agentbox killed them, only late.
func checkOrphans() error {
	self := os.Getpid()
	var alive []string
	for _, p := range listProcs() {
		if p.ppid != self {
			continue
		}
		if p.state == "Z" {
			var ws unix.WaitStatus
			unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
			continue
		}
		alive = append(alive, fmt.Sprintf("pid %d uid %d %q", p.pid, p.uid, p.cmdline))
		unix.Kill(p.pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(p.pid, &ws, 0, nil)
	}
	if len(alive) > 0 {
		return fmt.Errorf("processes outlived agentbox and were reparented to the test: %s", strings.Join(alive, "; "))
	}
	return nil
}
