package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestAmbientCapsCarrySetupCaps: a process cloned into a new user namespace and
// switched to uid 1000 holds every capability there until it calls execve; as uid
// 1000 with in-namespace root unmapped (the single-id mapping of an unprivileged
// agentbox) execve then clears them all, unless they are ambient. This is why the
// host raises nsinit.InitCaps as ambient capabilities there. As root the init is
// in-namespace uid 0 on a host uid of its own and holds every capability of the
// namespace after its execve, ambient or not.
func TestAmbientCapsCarrySetupCaps(t *testing.T) {
	testenv.RequireRoot(t)
	id, err := newIdentity()
	if err != nil {
		t.Fatal(err)
	}
	defer id.release()
	var want uint64
	for _, c := range nsinit.InitCaps() {
		want |= 1 << c
	}
	single := *id // the mapping an unprivileged agentbox makes, here of a root-picked id
	single.root, single.initUID, single.initGID = false, id.uid, id.gid
	for _, tt := range []struct {
		name    string
		id      *identity
		ambient bool
		capEff  uint64
		hostUID int
	}{
		{"single id without ambient", &single, false, 0, id.uid},
		{"single id with ambient", &single, true, want, id.uid},
		{"root", id, false, allCaps(t), id.initUID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			attr := tt.id.sysProcAttr()
			if !tt.ambient {
				attr.AmbientCaps = nil
			}
			cmd := exec.Command("/proc/self/exe")
			cmd.Args = []string{nsinit.Argv0Hold}
			cmd.SysProcAttr = attr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { stdin.Close(); cmd.Wait() }()
			// Start returns once execve succeeded: the status shows the result.
			st := hostStatus(t, cmd.Process.Pid)
			got, err := strconv.ParseUint(st["CapEff"], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			u := tt.hostUID
			if got != tt.capEff || st["Uid"] != fmt.Sprintf("%d\t%d\t%d\t%d", u, u, u, u) {
				t.Errorf("CapEff %#x Uid %q, want %#x and host uid %d", got, st["Uid"], tt.capEff, u)
			}
		})
	}
}

// allCaps is every capability this kernel knows.
func allCaps(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Fatal(err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return 1<<(last+1) - 1
}
