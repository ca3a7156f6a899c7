package sandbox

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

func TestConfigFill(t *testing.T) {
	c := Config{Argv: []string{"x"}}
	if err := c.fill(); err != nil {
		t.Fatal(err)
	}
	if c.Dir != DefaultDir || c.TmpSize != DefaultTmpSize || c.ShmSize != DefaultShmSize ||
		c.WorkspaceSize != DefaultWorkspaceSize {
		t.Errorf("defaults: %+v", c)
	}
	for _, bad := range []Config{{}, {Argv: []string{""}}, {Argv: []string{"x"}, Dir: "relative"}} {
		if err := bad.fill(); err == nil {
			t.Errorf("fill(%+v) accepted", bad)
		}
	}
}

// TestRlimitsSpec: core dumps are always off, unset limits are left alone, and a
// zero hard limit means "same as soft".
func TestRlimitsSpec(t *testing.T) {
	got := Rlimits{NoFile: Rlimit{Soft: 64}, CPU: Rlimit{Soft: 1, Hard: 2}}.spec()
	want := []nsinit.Rlimit{
		{Resource: unix.RLIMIT_CORE},
		{Resource: unix.RLIMIT_CPU, Cur: 1, Max: 2},
		{Resource: unix.RLIMIT_NOFILE, Cur: 64, Max: 64},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

func TestReportErr(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: "a", Required: true, OK: true},
		{Name: "b", Required: true},
		{Name: "c", Required: false},
		{Name: "d", Required: true},
	}}
	err := r.Err()
	var me *MissingError
	if !errors.Is(err, ErrUnsupported) || !errors.As(err, &me) || me.Mechanism != "b, d" {
		t.Errorf("Err() = %v", err)
	}
	if (Report{Checks: []Check{{Name: "a", Required: true, OK: true}}}).Err() != nil {
		t.Error("complete report has an error")
	}
}
