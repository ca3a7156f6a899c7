package attack

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEscape_PtraceAndSignalsAgainstInitAndHost (ANCHORS vector 9): the command
// attacks the init that holds the sandbox together (ptrace, process_vm_readv/writev,
// /proc/1/mem, kill, pidfd_send_signal) and a host process by its host pid. The init
// must survive and stay untouched; the host process must not even be addressable.
// Stopped by the seccomp deny-list (ptrace, process_vm_*), the init being undumpable
// and of another identity, the kernel's protection of a pid namespace's init, and the
// pid namespace itself.
func TestEscape_PtraceAndSignalsAgainstInitAndHost(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		v := fx.startVictim(1000)
		at := fx.direct(0, nil, "ptrace", strconv.Itoa(v.cmd.Process.Pid))
		at.mustSucceed(t, "control: root on the host reaches any process", "host:attach", "host:vm-read", "host:kill-term")
		if !v.waitExit(5 * time.Second) {
			t.Errorf("control: the victim survived SIGKILL")
		}
		fx.wantHostChanged(nil, "was killed")
	})
	t.Run("sandbox", func(t *testing.T) {
		requireSandbox(t)
		fx := newFixture(t)
		victims := []*victim{fx.startVictim(0), fx.startVictim(1000)}
		for _, v := range victims {
			r := fx.run(boxOpts{cmd: fx.attack("ptrace", strconv.Itoa(v.cmd.Process.Pid))})
			r.at.mustBeDone(t, "ptrace")
			r.at.mustFail(t, "ptrace-level access to the init", "init:attach", "init:seize", "init:vm-read", "init:vm-write", "init:mem")
			r.at.mustSucceed(t, "the init survived the attack", "init-alive")
			r.at.mustFail(t, "reach a host process by its host pid", r.at.withPrefix("host:")...)
			fx.verifyHost(r)
		}
	})
}

// TestEscape_KillAllFromInside (ANCHORS vector 20): kill(-1, SIGKILL) signals every
// process the caller may signal. Inside a pid namespace that is only the sandbox's own.
// Victims run on the host as root, as uid 1000, as nobody, and as the very host uid
// this run's sandbox user maps to (seen from the host while the attacker waits),
// where only the pid namespace stands between them and the signal.
func TestEscape_KillAllFromInside(t *testing.T) {
	t.Parallel()
	t.Run("control", func(t *testing.T) {
		// As a throw-away uid that owns nothing but one victim, kill(-1) on the
		// host reaches exactly that victim.
		requireAttacker(t)
		fx := newFixture(t)
		uid := 2_000_000_000 + int(randUint32()%1_000_000)
		fx.startVictim(uid)
		fx.directEnv = []string{"AGENTBOX_ATTACK_CONTROL_UID=" + strconv.Itoa(uid)}
		fx.direct(uid, nil, "killall").mustSucceed(t, "control: kill(-1) reaches the victim of the same uid", "kill-1-kill")
		fx.wantHostChanged(nil, "was killed")
	})
	t.Run("sandbox", testKillAllSandbox)
}

func testKillAllSandbox(t *testing.T) {
	requireSandbox(t)
	fx := newFixture(t)
	for _, uid := range []int{0, 1000, 65534} {
		fx.startVictim(uid)
	}
	var (
		mu        sync.Mutex
		sameUID   *victim
		victimErr error
	)
	// The attacker waits until its stdin ends, which the host closes once the
	// victim of the sandbox's host uid runs (20 s at most).
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinR.Close()
	defer stdinW.Close()
	r := fx.run(boxOpts{flags: []string{"--stdin", "-"}, stdin: stdinR, cmd: fx.attack("killall", "20000"), during: func() {
		defer stdinW.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, p := range procsWithTag(fx.tag) {
			if p.uid != 0 {
				sameUID, victimErr = fx.startVictimAsync(p.uid)
				return
			}
		}
		victimErr = fmt.Errorf("no process of the run seen with a non-root host uid")
	}})
	mu.Lock()
	defer mu.Unlock()
	if sameUID == nil {
		t.Errorf("could not start a victim under the sandbox's host uid: %v", victimErr)
	}
	r.at.mustBeDone(t, "killall")
	for _, n := range []string{"kill-1-usr1", "kill-1-kill"} {
		if at, ok := r.at.get(t, n); ok && !at.ok && strings.HasPrefix(at.detail, "REFUSED") {
			t.Errorf("the attacker refused to run: it is in the host's initial user namespace")
		}
	}
	fx.verifyHost(r)
}

// TestEscape_SurvivorsAfterSetsidAndDoubleFork (ANCHORS vector 19): a daemon leaves
// a process behind with a double fork and setsid (new session, new process group,
// reparented away from the command), ignoring SIGTERM and SIGHUP, with or without the
// output pipes. The run must end when the command exits, with survivors == 0 and
// nothing of the run left on the host: no process with its tag, no process of its host
// uid started during it, no cgroup. Not parallel: the uid scan must not see other runs
// of this package.
func TestEscape_SurvivorsAfterSetsidAndDoubleFork(t *testing.T) {
	for _, mode := range []string{"hold", "close"} {
		t.Run(mode, func(t *testing.T) {
			requireSandbox(t)
			fx := newFixture(t)
			start := time.Now()
			// The command stays until its stdin ends, which happens once the host
			// has seen the survivor (or given up after 10 s).
			stdinR, stdinW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdinR.Close()
			defer stdinW.Close()
			sawLinger := false
			during := func() {
				defer stdinW.Close()
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					for _, p := range procsWithTag(fx.tag) {
						if strings.Contains(p.cmdline, "linger") {
							sawLinger = true
							return
						}
					}
				}
			}
			r := fx.run(boxOpts{flags: []string{"--kill-grace", "500ms", "--timeout", attackTimeout, "--stdin", "-"},
				cmd: fx.attack("daemonize", fx.tag, mode), stdin: stdinR, during: during})
			r.at.mustSucceed(t, "the double fork happened", "spawn")
			if !sawLinger {
				t.Errorf("the host never saw the lingering process: the test proves nothing")
			}
			if r.res.TimedOut {
				t.Errorf("the run did not end when the command exited (timed out after %v): a survivor held it", r.duration)
			}
			fx.verifyHost(r)
			uids := r.watch.hostUIDs()
			for _, uid := range uids {
				if uid == 0 {
					t.Errorf("the sandbox's processes run as host root")
				}
			}
			time.Sleep(500 * time.Millisecond)
			for _, p := range listProcs() {
				if p.state == "Z" || !contains(intsToStrings(uids), strconv.Itoa(p.uid)) || p.uid == 0 {
					continue
				}
				if st := procStart(p.pid); st.After(start) {
					t.Errorf("HOST CHANGED: process of the sandbox's host uid %d started during the run is still alive: pid %d %q", p.uid, p.pid, p.cmdline)
				}
			}
		})
	}
}

func intsToStrings(v []int) []string {
	var out []string
	for _, x := range v {
		out = append(out, strconv.Itoa(x))
	}
	return out
}

// procStart returns when a process started (zero time if unknown).
func procStart(pid int) time.Time {
	st, err := readStatField(pid, 22)
	if err != nil {
		return time.Time{}
	}
	ticks, _ := strconv.ParseInt(st, 10, 64)
	boot := bootTime()
	return boot.Add(time.Duration(ticks) * time.Second / 100) // USER_HZ is 100 on Linux
}

func readStatField(pid, field int) (string, error) {
	b, err := readFileString(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	i := strings.LastIndexByte(b, ')')
	f := strings.Fields(b[i+1:])
	if field-3 >= len(f) || field < 3 {
		return "", fmt.Errorf("short stat")
	}
	return f[field-3], nil
}
