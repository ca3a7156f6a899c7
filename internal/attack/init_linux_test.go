package attack

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/env/envtest"
)

// initAttempts are the attempts of init-reach that change or probe the init.
var initAttempts = []string{"kill-0", "pidfd-signal-0", "prlimit-read", "setpriority-pid", "setpriority-pgrp",
	"setpriority-user", "sched_setaffinity", "sched_setattr-idle", "sched_setscheduler-idle", "ioprio-pid",
	"ioprio-pgrp", "ioprio-user", "prlimit-as", "prlimit-nproc", "prlimit-nofile", "prlimit-cpu"}

// TestEscape_CommandEndsItsInit (issue 10, item 3): a command changes the limits,
// priority and affinity of the init that holds its sandbox together. When both
// share a uid the kernel allows it: RLIMIT_NOFILE 8 on the init breaks the next
// exec of an environment, RLIMIT_CPU 0 gets the init SIGKILLed (a normal exit is
// then reported as SIGKILL), RLIMIT_NPROC 0 breaks every later exec, RLIMIT_AS
// 1 MiB is inherited by every later command, and SCHED_IDLE or nice 19 starve it.
// One command must not be able to end (or cripple) its environment. Stopped by
// the init's own credentials (in-namespace uid 0 on a host uid of its own, as
// root: the kernel refuses a uid 1000 caller, as kill(1, 0) with EPERM shows) and
// by seccomp rules on a pid argument of 1 and on PRIO_USER/IOPRIO_WHO_USER (where
// an unprivileged agentbox maps one id and both run as it).
func TestEscape_CommandEndsItsInit(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		// A victim of a throw-away uid, attacked by the same uid without a sandbox.
		requireAttacker(t)
		fx := newFixture(t)
		uid := 2_000_000_000 + int(randUint32()%1_000_000)
		v := fx.startVictim(uid)
		fx.directEnv = []string{"AGENTBOX_ATTACK_CONTROL_UID=" + strconv.Itoa(uid)}
		at := fx.direct(uid, nil, "init-reach", strconv.Itoa(v.cmd.Process.Pid))
		at.mustBeDone(t, "init-reach")
		at.mustSucceed(t, "control: a process of the same uid reaches the target", "kill-0", "pidfd-signal-0",
			"prlimit-read", "setpriority-pid", "setpriority-user", "sched_setaffinity", "sched_setattr-idle",
			"sched_setscheduler-idle", "ioprio-pid", "ioprio-user", "prlimit-as", "prlimit-nproc", "prlimit-nofile", "prlimit-cpu")
		if before, after := at.byName["limits-before"].detail, at.byName["limits-after"].detail; before == after {
			t.Errorf("control: the target's limits did not change:\n%s", after)
		}
		if s := at.byName["sched-after"].detail; !strings.HasPrefix(s, "nice 19 policy 5 ") {
			t.Errorf("control: the target's scheduling did not change: %s", s)
		}
	})
	t.Run("run", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{cmd: fx.attack("init-reach", "1")})
		checkInitUntouched(t, r.at)
		if r.res.ExitCode != 0 || r.res.Signal != nil || r.res.Error != "" {
			t.Errorf("the attacker exited 0, but the run reports exit %d, signal %q, error %q", r.res.ExitCode, r.res.sig(), r.res.Error)
		}
		fx.verifyHost(r)
	})
	t.Run("environment", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		fx.snapshot()
		m := envtest.New(t)
		ctx := context.Background()
		owner := env.Owner{Tenant: "attack"}
		info, err := m.Create(ctx, env.CreateOptions{Owner: owner, Workspace: fx.ws})
		if err != nil {
			t.Fatal(err)
		}
		exec := func(args ...string) *attempts {
			t.Helper()
			res, err := m.Exec(ctx, owner, info.ID, env.ExecRequest{Argv: fx.attack(args[0], args[1:]...), Timeout: 30 * time.Second})
			if err != nil {
				t.Fatalf("exec %v: %v", args, err)
			}
			at := parseAttempts(res.Stdout)
			t.Logf("exec %v: exit %d, signal %v, error %q\n%sstderr: %.2000s", args, res.ExitCode, res.Signal, res.Error, at.dump(), res.Stderr)
			if res.ExitCode != 0 || res.Signal != nil || res.Error != "" {
				t.Errorf("exec %v: exit %d, signal %v, error %q; want a normal exit 0", args, res.ExitCode, res.Signal, res.Error)
			}
			at.mustBeDone(t, args[0])
			return at
		}
		base := exec("limits")
		checkInitUntouched(t, exec("init-reach", "1"))
		// The next commands start with the limits every command gets, also after
		// one that lowered its own and left a child running with them.
		checkSameLimits(t, "after the attack on the init", base, exec("limits"))
		exec("limits", "lower").mustSucceed(t, "a command lowers its own limits", "lower")
		checkSameLimits(t, "after a command lowered its own limits", base, exec("limits"))
		got, err := m.Get(ctx, owner, info.ID)
		if err != nil || got.State != env.StateRunning {
			t.Errorf("the environment did not survive its commands: %+v, %v", got, err)
		}
		if err := m.Destroy(ctx, owner, info.ID); err != nil {
			t.Errorf("destroy: %v", err)
		}
		for _, d := range fx.hostDiffs(nil) {
			t.Errorf("HOST CHANGED: %s", d)
		}
		for _, p := range procsWithTag(fx.tag) {
			t.Errorf("process of the environment still alive after Destroy: pid %d %q", p.pid, p.cmdline)
		}
	})
}

// checkInitUntouched asserts that init-reach got nowhere with pid 1.
func checkInitUntouched(t *testing.T, at *attempts) {
	t.Helper()
	at.mustBeDone(t, "init-reach")
	if a, ok := at.get(t, "target"); ok {
		// "target Uid R E S F; self Uid R E S F": as root the init has ids of its own.
		target, self, _ := strings.Cut(strings.TrimPrefix(a.detail, "target Uid "), "; self Uid ")
		if target == self || target == "" {
			t.Errorf("the init runs with the command's own uids (%s): only a filter stands between them", a.detail)
		}
	}
	at.mustFail(t, "reach the sandbox's init", initAttempts...)
	// A signal to the init is no filter's business: only the init's other uid stops it.
	at.mustFailWith(t, "signal the init", []string{"EPERM"}, "kill-0", "pidfd-signal-0")
	if before, after := at.byName["limits-before"].detail, at.byName["limits-after"].detail; before == "" || before != after {
		t.Errorf("ESCAPE the init's limits changed:\nbefore %s\nafter %s", before, after)
	}
	if before, after := at.byName["sched-before"].detail, at.byName["sched-after"].detail; before == "" || before != after {
		t.Errorf("ESCAPE the init's scheduling changed: before %q, after %q", before, after)
	}
}

// checkSameLimits asserts that a later command's limits and scheduling are those
// of the first, and that it can still fork.
func checkSameLimits(t *testing.T, when string, base, got *attempts) {
	t.Helper()
	got.mustSucceed(t, "a command "+when+" starts a child", "fork")
	for _, n := range []string{"nofile", "cpu", "nproc", "as", "sched"} {
		if b, g := base.byName[n], got.byName[n]; !b.ok || b != g {
			t.Errorf("%s: the next command's %s is %v, the first command's %v", when, n, g, b)
		}
	}
}
