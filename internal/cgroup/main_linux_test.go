package cgroup

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testenv"
)

// helperEnv makes the test binary act as a child process: see runHelper.
const helperEnv = "AGENTBOX_CGROUP_TEST_HELPER"

// testParent keeps this test binary's groups apart from real runs and from other
// test binaries running at the same time.
var testParent = fmt.Sprintf("agentbox-test-%d", os.Getpid())

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode)
		return
	}
	base := testenv.Take()
	code := m.Run()
	leakErr := base.Check(30 * time.Second)
	// Remove the test groups whatever happened, so a failed run leaves nothing.
	left, groupErr := removeTestGroups()
	if len(left) > 0 {
		groupErr = errors.Join(fmt.Errorf("test groups left behind: %v", left), groupErr)
	}
	if err := errors.Join(leakErr, groupErr); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// runHelper is the child side of the tests. Every mode first blocks on one byte of
// stdin: the start gate the parent opens after AddProc, so the work below always
// runs inside the group.
func runHelper(mode string) {
	var gate [1]byte
	if _, err := os.Stdin.Read(gate[:]); err != nil {
		os.Exit(3)
	}
	switch mode {
	case "alloc": // touch 200 MiB of anonymous memory
		b := make([]byte, 200<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("allocated", len(b))
	case "spin-cpu": // spin until this process has used AGENTBOX_SPIN of CPU in the group
		// Counted from the gate: what the process used before it was placed
		// (its start, which a loaded host makes tens of milliseconds) is on its
		// rusage but not on the group's counters.
		d, _ := time.ParseDuration(os.Getenv("AGENTBOX_SPIN"))
		for base := cpuTime(); cpuTime()-base < d; {
			for i := range 10_000_000 { // stay in user space between getrusage calls
				sink += i
			}
		}
	case "sleep":
		time.Sleep(time.Hour)
	default:
		os.Exit(4)
	}
	os.Exit(0)
}

var sink int

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// removeTestGroups kills and removes every group under testParent, then
// testParent itself, in the v1 hierarchies and the cgroup2 mount. It returns the
// groups it found.
func removeTestGroups() ([]string, error) {
	l, err := readLayout()
	if err != nil {
		return nil, nil // no cgroups: nothing can have been left
	}
	layouts := []layout{l}
	if l.unified != "" && l.version() == 1 { // TestV2Core uses the cgroup2 mount too
		layouts = append(layouts, layout{mode: ModeV2, unified: l.unified})
	}
	var left []string
	var errs []error
	for _, l := range layouts {
		names, err := reap(l, testParent, "") // every group: they are all ours
		left = append(left, names...)
		errs = append(errs, err)
		for _, dir := range parentDirs(l, testParent) {
			errs = append(errs, rmdir(dir))
		}
	}
	return left, errors.Join(errs...)
}

// procStat returns the parent pid and state letter of pid, or 0 and "" when it is
// gone.
func procStat(pid int) (ppid int, state string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0]
}
