package gvisor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/cgroup"
	"github.com/agentbox/agentbox/internal/testenv"
)

// A run that died without Destroy leaves its state directory and its cgroup; the
// next Start removes them, and never a live run's.
func TestReapStale(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	mk := func() (string, string) {
		state, err := os.MkdirTemp(dir, statePrefix)
		if err != nil {
			t.Fatal(err)
		}
		id := "agentbox-" + randomHex()
		cg, err := cgroup.New(cgroup.Options{Name: id, Pids: 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cg.Delete() })
		return state, id
	}
	dead, deadID := mk()
	lock, err := lockState(dead, deadID)
	if err != nil {
		t.Fatal(err)
	}
	lock.Close() // the run is gone: nobody holds its lock
	live, liveID := mk()
	held, err := lockState(live, liveID)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	settingUp, _ := mk() // no lock yet: a run between MkdirTemp and lockState

	reapStale(dir)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead run's state is still there: %v", err)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroup.DefaultParent + "/" + deadID); len(left) > 0 {
		t.Errorf("the dead run's cgroup is still there: %v", left)
	}
	for _, keep := range []string{live, settingUp} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("a live run's state was removed: %v", err)
		}
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroup.DefaultParent + "/" + liveID); len(left) == 0 {
		if _, err := os.Stat("/sys/fs/cgroup/" + cgroup.DefaultParent + "/" + liveID); err != nil {
			t.Errorf("the live run's cgroup was removed")
		}
	}
}
