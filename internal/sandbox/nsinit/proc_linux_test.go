package nsinit

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestProcStat: the generated /proc/stat keeps the host's CPU lines with every
// counter zero, and carries the sandbox's btime instead of the host's.
func TestProcStat(t *testing.T) {
	host := "cpu  370117 914 210208 99453 1598 0 3571 11415 0 0\n" +
		"cpu0 186131 471 103400 51751 380 0 1037 5424 0 0\n" +
		"cpu3 183986 442 106808 47702 1218 0 2534 5991 0 0\n" +
		"intr 14711576 0 0 1 1 14\nctxt 41173819\nbtime 1796154591\nprocesses 243941\n" +
		"procs_running 7\nprocs_blocked 0\nsoftirq 6014648 0 358516 4707 1547469 520038 0 648 240195 220906 3122169\n"
	p := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(p, []byte(host), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := procStat(p, 1796157962)
	if err != nil {
		t.Fatal(err)
	}
	want := "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu3 0 0 0 0 0 0 0 0 0 0\n" +
		"intr 0\nctxt 0\nbtime 1796157962\nprocesses 0\nprocs_running 0\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestBootID: a version 4 UUID, a fresh one each time.
func TestBootID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$`)
	a, b := bootID(), bootID()
	if !re.Match(a) || !re.Match(b) || string(a) == string(b) {
		t.Errorf("boot ids %q, %q", a, b)
	}
}
