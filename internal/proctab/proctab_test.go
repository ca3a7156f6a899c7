package proctab

import (
	"os"
	"testing"
)

func TestParse(t *testing.T) {
	// A command name with spaces and parentheses, as sandboxed code may choose.
	line := "42 (a) b (c)) S 7 8 9 34816 8 4194560 109 0 0 0 1 2 0 0 20 0 1 0 12345 4096 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
	p, err := Parse(42, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Proc{PID: 42, PPID: 7, PGID: 8, SID: 9, State: 'S', Start: 12345}); p != want {
		t.Fatalf("Parse = %+v, want %+v", p, want)
	}
	for _, bad := range []string{"", "42 (x", "42 (x) S 1 2", "42 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", "42 (x) S a 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if _, err := Parse(42, []byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestReadSeesSelf(t *testing.T) {
	procs, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.PID == os.Getpid() {
			if p.PPID != os.Getppid() {
				t.Fatalf("own ppid %d, want %d", p.PPID, os.Getppid())
			}
			return
		}
	}
	t.Fatal("own process not in the table")
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 0 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(1, b)
		if err == nil && p.PID != 1 {
			t.Fatalf("pid %d", p.PID)
		}
	})
}
