package cgroup

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hybridHost is /proc/self/mountinfo of the CI machine: v1 controllers in separate
// hierarchies and a cgroup2 mount with none.
const hybridHost = `23 1 254:1 / / rw,relatime - ext4 /dev/vda rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestLayoutOf(t *testing.T) {
	tests := []struct {
		name      string
		mountinfo string
		want      layout
		version   int
	}{
		{"hybrid CI host", hybridHost, layout{
			mode:    ModeHybrid,
			unified: "/sys/fs/cgroup/unified",
			v1: map[string]string{
				Memory: "/sys/fs/cgroup/memory", Pids: "/sys/fs/cgroup/pids", CPU: "/sys/fs/cgroup/cpu",
				CPUAcct: "/sys/fs/cgroup/cpuacct", Freezer: "/sys/fs/cgroup/freezer",
			},
		}, 1},
		{"unified", "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			layout{mode: ModeV2, unified: "/sys/fs/cgroup", v1: map[string]string{}}, 2},
		{"legacy, cpu and cpuacct co-mounted, optional fields",
			"25 24 0:22 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:9 master:3 - cgroup cgroup rw,cpu,cpuacct\n" +
				"26 24 0:23 / /sys/fs/cgroup/memory rw shared:10 - cgroup cgroup rw,memory\n",
			layout{mode: ModeV1, v1: map[string]string{CPU: "/sys/fs/cgroup/cpu,cpuacct", CPUAcct: "/sys/fs/cgroup/cpu,cpuacct", Memory: "/sys/fs/cgroup/memory"}}, 1},
		{"v2 with only a named v1 hierarchy is v2",
			"30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n40 31 0:37 / /run/systemd rw - cgroup cgroup rw,name=systemd\n",
			layout{mode: ModeV2, unified: "/sys/fs/cgroup", v1: map[string]string{}}, 2},
		{"first mount of a controller wins; escaped space",
			"35 31 0:32 / /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory\n35 31 0:32 /x /elsewhere rw - cgroup cgroup rw,memory\n",
			layout{mode: ModeV1, v1: map[string]string{Memory: "/sys/fs/cgroup/mem ory"}}, 1},
		{"none", "23 1 254:1 / / rw,relatime - ext4 /dev/vda rw\n", layout{v1: map[string]string{}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mounts, err := parseMountinfo(strings.NewReader(tt.mountinfo))
			if err != nil {
				t.Fatal(err)
			}
			got := layoutOf(mounts)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(layout{})); diff != "" {
				t.Errorf("layout (-want +got):\n%s", diff)
			}
			if v := got.version(); v != tt.version {
				t.Errorf("version %d, want %d", v, tt.version)
			}
		})
	}
}

func TestParseMountinfoMalformed(t *testing.T) {
	for _, line := range []string{
		"31 23 0:28 / /sys/fs/cgroup rw,relatime tmpfs tmpfs rw\n", // no separator
		"31 23 0:28 / /sys/fs/cgroup rw - cgroup\n",                // too short after it
		"31 - cgroup cgroup rw\n",                                  // separator too early
	} {
		if _, err := parseMountinfo(strings.NewReader(line)); err == nil {
			t.Errorf("parseMountinfo(%q) succeeded", line)
		}
	}
}

func TestUnescapeOctal(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`:    "/a b",
		`/a\011b`:    "/a\tb",
		`/a\134b`:    `/a\b`,
		`/a\0`:       `/a\0`, // truncated escape stays
		`/a\999`:     `/a\999`,
		`/plain`:     "/plain",
		`\040\040x`:  "  x",
		`/end\040`:   "/end ",
		`/bad\04x`:   `/bad\04x`,
		`/big\777xx`: `/big\777xx`, // above a byte
	} {
		if got := unescapeOctal(in); got != want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", in, got, want)
		}
	}
}
