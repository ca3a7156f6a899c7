package cgroup

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestDetectHost: on the CI host (v1 hybrid) Detect reports the five v1
// controllers, each at a real cgroup v1 mount of a hierarchy the kernel enabled.
func TestDetectHost(t *testing.T) {
	testenv.RequireRoot(t)
	info := Detect()
	t.Logf("%+v", info)
	testenv.Require(t, info.Version == 1, "a cgroup v1 host (CI is v1 hybrid); got "+info.Mode.String())
	if !info.CanCreate || info.Reason != "" {
		t.Errorf("CanCreate %v, Reason %q", info.CanCreate, info.Reason)
	}
	var st unix.Statfs_t
	wantMode := ModeV1
	if unix.Statfs("/sys/fs/cgroup/unified", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		wantMode = ModeHybrid
		if info.Unified != "/sys/fs/cgroup/unified" {
			t.Errorf("Unified = %q", info.Unified)
		}
	}
	if info.Mode != wantMode {
		t.Errorf("Mode %v, want %v", info.Mode, wantMode)
	}
	enabled := procCgroups(t)
	var names []string
	for _, c := range info.Controllers {
		names = append(names, c.Name)
		if !c.Available || !c.Usable {
			t.Errorf("%s: available %v usable %v (%s)", c.Name, c.Available, c.Usable, c.Reason)
		}
		if err := unix.Statfs(c.Mount, &st); err != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
			t.Errorf("%s: %s is not a cgroup v1 mount (%v)", c.Name, c.Mount, err)
		}
		if !enabled[c.Name] {
			t.Errorf("%s: not an enabled, mounted hierarchy in /proc/cgroups", c.Name)
		}
	}
	if !slices.Equal(names, controllers) {
		t.Errorf("controllers %v, want %v", names, controllers)
	}
	if !info.Usable(Memory, Pids, CPU, CPUAcct, Freezer) || info.Usable("cpuset") {
		t.Error("Usable disagrees with the list")
	}
}

// procCgroups reads /proc/cgroups: which controllers sit in a mounted hierarchy.
func procCgroups(t *testing.T) map[string]bool {
	f, err := os.Open("/proc/cgroups")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// #subsys_name hierarchy num_cgroups enabled
		f := strings.Fields(sc.Text())
		if len(f) == 4 && !strings.HasPrefix(f[0], "#") {
			out[f[0]] = f[1] != "0" && f[3] == "1"
		}
	}
	return out
}

// TestDetectV2Mount runs the v2 detection against the host's cgroup2 mount: the
// controllers it offers are usable, the others are reported missing with the
// file that says so, and the built-ins (cpu.stat, cgroup.kill) are there.
func TestDetectV2Mount(t *testing.T) {
	l := unifiedLayout(t)
	info := detect(l, testParent)
	t.Logf("%+v", info)
	offered := fields(l.unified + "/cgroup.controllers")
	if info.Version != 2 || !info.CanCreate {
		t.Fatalf("Version %d CanCreate %v (%s)", info.Version, info.CanCreate, info.Reason)
	}
	for _, c := range info.Controllers {
		want := slices.Contains(offered, c.Name) || c.Name == CPUAcct || c.Name == Freezer
		if c.Usable != want || c.Available != want {
			t.Errorf("%s: available %v usable %v, want %v (%s)", c.Name, c.Available, c.Usable, want, c.Reason)
		}
		if !want && !strings.Contains(c.Reason, "cgroup.controllers") {
			t.Errorf("%s: reason %q does not point at cgroup.controllers", c.Name, c.Reason)
		}
	}
}
