package attack

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// mountTable returns the host's mounts as "mountpoint type source" lines (mount ids
// and peer groups left out: they are not what "unchanged" means here).
func mountTable(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(f) || len(f) < 5 {
			continue
		}
		out = append(out, f[4]+" "+f[sep+1]+" "+f[sep+2])
	}
	sort.Strings(out)
	return out
}

// stateRoot is where agentbox (as root, with no TMPDIR in its environment) keeps
// the private upper layer of each overlay run, on a size-limited tmpfs it mounts on
// the host for the run's duration: a host mount by design, at a fixed place so that
// one left by a crash can be found (sandbox.ReapStale). hostDiffs checks that the
// run's own is gone afterwards.
const stateRoot = "/tmp/agentbox-state"

// withoutForeignMounts drops the mountTable lines of upper-layer tmpfs mounts, which
// the host side of agentbox mounts by design. Other processes on the machine do not
// show: the tests run in a mount namespace of their own (TestMain).
func withoutForeignMounts(ms []string) []string {
	var out []string
	for _, m := range ms {
		mp, _, _ := strings.Cut(m, " ")
		if !strings.HasPrefix(mp, stateRoot+"/") || !strings.HasSuffix(m, " tmpfs tmpfs") {
			out = append(out, m)
		}
	}
	return out
}

// mountsUnder returns the mount points of the host's mounts at dir or below it.
func mountsUnder(dir string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

func diffLists(before, after []string) (added, removed []string) {
	count := map[string]int{}
	for _, x := range before {
		count[x]++
	}
	for _, x := range after {
		count[x]--
	}
	for x, n := range count {
		for ; n < 0; n++ {
			added = append(added, x)
		}
		for ; n > 0; n-- {
			removed = append(removed, x)
		}
	}
	return added, removed
}

// TestEscape_MountPropagation (ANCHORS vector 14): mounts must not cross between the
// host and the sandbox in either direction. While the sandbox runs, the host mounts a
// tmpfs with a marker under the workspace directory; the sandbox watches for it and
// must never see it. And nothing the sandbox's setup mounts may appear in the host's
// mount table, during the run or after it, except the upper layer's tmpfs that the
// host itself mounts in stateRoot (gone after the run: hostDiffs). Stopped by a
// private (not shared, not slave) mount namespace and detached mount trees. Not
// parallel: it compares the whole mount table of the tests' own mount namespace.
func TestEscape_MountPropagation(t *testing.T) {
	for _, write := range []bool{false, true} {
		name := "overlay"
		var flags []string
		if write {
			name, flags = "write-bind", []string{"--write"}
		}
		t.Run(name, func(t *testing.T) {
			requireSandbox(t)
			fx := newFixture(t)
			fx.wsWritable = write
			probe := filepath.Join(fx.ws, "probe")
			if err := os.Mkdir(probe, 0o755); err != nil {
				t.Fatal(err)
			}
			before := withoutForeignMounts(mountTable(t))
			var (
				mu     sync.Mutex
				during []string
				merr   error
			)
			mounted := false
			t.Cleanup(func() {
				if mounted {
					unix.Unmount(probe, unix.MNT_DETACH)
				}
			})
			// The sandbox watches until its stdin ends, which the host closes once it
			// has mounted and written the marker (20 s at most).
			stdinR, stdinW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdinR.Close()
			defer stdinW.Close()
			r := fx.run(boxOpts{flags: append([]string{"--stdin", "-"}, flags...), stdin: stdinR,
				cmd: fx.attack("watchfile", "/workspace/probe/marker", "20000"), during: func() {
					defer stdinW.Close()
					mu.Lock()
					defer mu.Unlock()
					during = withoutForeignMounts(mountTable(t))
					if merr = unix.Mount("tmpfs", probe, "tmpfs", 0, "size=64k"); merr != nil {
						return
					}
					mounted = true
					merr = os.WriteFile(filepath.Join(probe, "marker"), []byte("host mount "+fx.tag), 0o644)
				}})
			mu.Lock()
			defer mu.Unlock()
			if during == nil || merr != nil {
				t.Fatalf("the host could not mount under the workspace during the run (seen %v): %v", during != nil, merr)
			}
			r.at.mustBeDone(t, "watchfile")
			r.at.mustFail(t, "a host mount made during the run propagated into the sandbox", "watch")
			added, removed := diffLists(before, during)
			for _, m := range added {
				t.Errorf("ESCAPE mount propagation: the host's mount table gained %q while the sandbox ran", m)
			}
			for _, m := range removed {
				t.Errorf("ESCAPE mount propagation: the host's mount table lost %q while the sandbox ran", m)
			}
			if err := unix.Unmount(probe, 0); err == nil {
				mounted = false
			}
			added, removed = diffLists(before, withoutForeignMounts(mountTable(t)))
			for _, m := range append(added, removed...) {
				t.Errorf("HOST CHANGED: the host's mount table differs after the run: %q", m)
			}
			fx.verifyHost(r)
		})
	}
}
