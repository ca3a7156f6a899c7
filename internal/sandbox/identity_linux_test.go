package sandbox

import (
	"fmt"
	"os/exec"
	"strconv"
	"testing"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestAmbientCapsCarrySetupCaps: a process cloned into a new user namespace and
// switched to uid 1000 holds every capability there until it calls execve; as uid
// 1000 (in-namespace root unmapped) execve then clears them all, unless they are
// ambient. This is why the host raises nsinit.InitCaps as ambient capabilities.
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
	for _, tt := range []struct {
		name    string
		ambient bool
		capEff  uint64
	}{{"without ambient", false, 0}, {"with ambient", true, want}} {
		t.Run(tt.name, func(t *testing.T) {
			attr := id.sysProcAttr()
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
			if got != tt.capEff || st["Uid"] != fmt.Sprintf("%d\t%d\t%d\t%d", id.uid, id.uid, id.uid, id.uid) {
				t.Errorf("CapEff %#x Uid %q, want %#x and host uid %d", got, st["Uid"], tt.capEff, id.uid)
			}
		})
	}
}
