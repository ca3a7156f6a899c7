package nsinit

import (
	"slices"
	"testing"
)

// TestLedger replays scans of a persistent sandbox's processes and checks which
// command each process is attributed to (0: none).
func TestLedger(t *testing.T) {
	type scan struct {
		procs []proc
		want  map[int]uint64 // pid -> command
	}
	p := func(pid, ppid, sid int, start uint64) proc {
		return proc{pid: pid, ppid: ppid, sid: sid, state: 'S', start: start}
	}
	tests := []struct {
		name   string
		adopt  map[uint64]proc
		forget []uint64 // before the last scan
		scans  []scan
	}{
		{
			name:  "descendants in the session and below",
			adopt: map[uint64]proc{1: p(10, 1, 10, 100), 2: p(20, 1, 20, 100)},
			scans: []scan{{
				procs: []proc{p(10, 1, 10, 100), p(11, 10, 10, 101), p(12, 11, 10, 102), p(20, 1, 20, 100), p(21, 20, 20, 103)},
				want:  map[int]uint64{10: 1, 11: 1, 12: 1, 20: 2, 21: 2},
			}},
		},
		{
			name:  "own session while the parent lives, then orphaned",
			adopt: map[uint64]proc{1: p(10, 1, 10, 100)},
			scans: []scan{
				{procs: []proc{p(10, 1, 10, 100), p(11, 10, 11, 101)}, want: map[int]uint64{11: 1}},
				// Parent gone: it keeps its command; so does a child of its own
				// session born after, as an orphan.
				{procs: []proc{p(11, 1, 11, 101), p(12, 1, 11, 102)}, want: map[int]uint64{11: 1, 12: 1}},
			},
		},
		{
			name:  "orphan in the command's session after the main process is gone",
			adopt: map[uint64]proc{1: p(10, 1, 10, 100)},
			scans: []scan{{procs: []proc{p(13, 1, 10, 105)}, want: map[int]uint64{13: 1}}},
		},
		{
			name:  "setsid and double fork unseen: unattributed",
			adopt: map[uint64]proc{1: p(10, 1, 10, 100)},
			scans: []scan{{procs: []proc{p(10, 1, 10, 100), p(15, 1, 14, 105)}, want: map[int]uint64{10: 1, 15: 0}}},
		},
		{
			name:  "reused pid is a new process",
			adopt: map[uint64]proc{1: p(10, 1, 10, 100), 2: p(20, 1, 20, 100)},
			scans: []scan{
				{procs: []proc{p(10, 1, 10, 100), p(11, 10, 10, 101), p(20, 1, 20, 100)}, want: map[int]uint64{11: 1}},
				// 11 died; its pid now names a child of command 2's main process.
				{procs: []proc{p(10, 1, 10, 100), p(20, 1, 20, 100), p(11, 20, 20, 300)}, want: map[int]uint64{11: 2}},
			},
		},
		{
			name:  "an emptied session is forgotten",
			adopt: map[uint64]proc{1: p(10, 1, 10, 100)},
			scans: []scan{
				{procs: nil, want: map[int]uint64{}},
				// A new session leader reusing pid 10, re-parented to the init.
				{procs: []proc{p(10, 1, 10, 500)}, want: map[int]uint64{10: 0}},
			},
		},
		{
			name:   "forgotten command",
			adopt:  map[uint64]proc{1: p(10, 1, 10, 100)},
			forget: []uint64{1},
			scans:  []scan{{procs: []proc{p(10, 1, 10, 100), p(11, 10, 10, 101)}, want: map[int]uint64{10: 0, 11: 0}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger()
			for id, mp := range tt.adopt {
				l.adopt(id, mp.pid)
			}
			for i, sc := range tt.scans {
				if i == len(tt.scans)-1 {
					for _, id := range tt.forget {
						l.forget(id)
					}
				}
				l.update(sc.procs)
				for pid, want := range sc.want {
					got, ok := l.lookup(pid)
					if !ok {
						got = 0
					}
					if got != want {
						t.Errorf("scan %d: pid %d attributed to %d, want %d", i, pid, got, want)
					}
					if want != 0 && !slices.ContainsFunc(l.members[want], func(m proc) bool { return m.pid == pid }) {
						t.Errorf("scan %d: pid %d not among the members of %d", i, pid, want)
					}
				}
			}
		})
	}
}

// TestLedgerReaped: a reaped process leaves its command's members at once, so the
// members of the last scan less the reaped are what is left of the command.
func TestLedgerReaped(t *testing.T) {
	l := newLedger()
	l.adopt(1, 10)
	l.update([]proc{{pid: 10, ppid: 1, sid: 10, state: 'Z', start: 100}, {pid: 11, ppid: 10, sid: 10, state: 'Z', start: 101}})
	if n := len(l.members[1]); n != 2 {
		t.Fatalf("%d members after the scan, want 2", n)
	}
	l.reaped(10)
	if _, ok := l.lookup(10); ok {
		t.Error("reaped main process still attributed")
	}
	if m := l.members[1]; len(m) != 1 || m[0].pid != 11 {
		t.Errorf("members after reaping 10: %+v, want 11 alone", m)
	}
	l.reaped(11)
	if n := len(l.members[1]); n != 0 {
		t.Errorf("%d members after reaping both", n)
	}
}
