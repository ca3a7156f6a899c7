package sandbox

import (
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
)

// TestProbe: on this host (root, kernel with every mechanism) the probe finds every
// required mechanism, and each check says something.
func TestProbe(t *testing.T) {
	testenv.RequireRoot(t)
	r := Probe()
	for _, c := range r.Checks {
		t.Logf("%-32s required=%-5v ok=%-5v %s", c.Name, c.Required, c.OK, c.Detail)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if r.LandlockABI < 1 || r.CgroupVersion == 0 {
		t.Errorf("LandlockABI %d, CgroupVersion %d", r.LandlockABI, r.CgroupVersion)
	}
	if len(r.Checks) < 10 {
		t.Errorf("only %d checks", len(r.Checks))
	}
}
