package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/trace"
)

// emit appends n events of a small session through a trace.Log whose journal is d.
func session(t *testing.T, d *Driver, after *State, n int) *trace.Log {
	t.Helper()
	lo := trace.LogOptions{Session: "s-test", Journal: d}
	if after != nil {
		lo.After.Seq, lo.After.Hash = after.Seq, after.Hash
	}
	log := trace.NewLog(lo)
	for i := 0; i < n; i++ {
		emitStep(log, int(log.Anchor().Seq))
	}
	return log
}

// emitStep appends the next event of a fixed script: SessionCreated, then
// steps of TurnStarted, ToolCallProposed, ToolExecutionStarted,
// ToolExecutionFinished, TurnCompleted.
func emitStep(log *trace.Log, seq int) {
	if seq == 0 {
		log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-test", Goal: "g"})
		return
	}
	step := (seq-1)/5 + 1
	id := "call_" + string(rune('a'+step%26)) + string(rune('0'+step/26))
	switch (seq - 1) % 5 {
	case 0:
		log.Emit(trace.TurnStarted, step, "", trace.TurnStart{})
	case 1:
		log.Emit(trace.ToolCallProposed, step, id, trace.Decision{Tool: "fs.write", CallID: id})
	case 2:
		log.Emit(trace.ToolExecutionStarted, step, id, trace.ToolStart{Tool: "fs.write", Effect: "write", Pre: "v" + string(rune('0'+step%10))})
	case 3:
		log.Emit(trace.ToolExecutionFinished, step, id, trace.ToolFinish{Effect: &trace.Effect{Version: "v" + string(rune('0'+(step+1)%10)), Diff: []byte{byte(step)}}})
	case 4:
		log.Emit(trace.TurnCompleted, step, "", trace.TurnEnd{})
	}
}

func open(t *testing.T, dir string, o Options) *Store {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAppendLoadAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{SnapshotEvery: 7})
	d, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	log := session(t, d, nil, 23)
	if err := log.Halted(); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Snapshots at 7, 14, 21: Load starts at 21 and replays 2.
	if st.Seq != 23 || st.FromSnapshot != 21 || st.Replayed != 2 {
		t.Fatalf("seq %d from snapshot %d replayed %d, want 23, 21, 2", st.Seq, st.FromSnapshot, st.Replayed)
	}
	evs, _ := s.Events(0)
	full, err := Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	if !sameState(full, st) {
		t.Fatalf("snapshot+tail state differs from the full fold:\n%+v\n%+v", full, st)
	}
}

func TestFencing(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	d1, _ := s.Acquire(ctx)
	log1 := session(t, d1, nil, 4)
	// A second driver, in another process here modelled by a second Store on the
	// same file, takes the session.
	s2 := open(t, filepath.Dir(dbPath(s)), Options{})
	d2, err := s2.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d2.Epoch() != d1.Epoch()+1 {
		t.Fatalf("epochs %d then %d", d1.Epoch(), d2.Epoch())
	}
	emitStep(log1, 4)
	if err := log1.Halted(); !errors.Is(err, ErrFenced) {
		t.Fatalf("the stale driver's append: %v, want ErrFenced", err)
	}
	// Nothing more goes anywhere from the stale log.
	if ev := log1.Emit(trace.TurnCompleted, 1, "", nil); ev.Seq != 0 {
		t.Fatalf("a halted log recorded event %d", ev.Seq)
	}
	st, _ := s2.Load()
	if st.Seq != 4 {
		t.Fatalf("the store holds %d events, want 4", st.Seq)
	}
	log2 := session(t, d2, st, 2)
	if err := log2.Halted(); err != nil || log2.Anchor().Seq != 6 {
		t.Fatalf("the new driver: %v at %d", err, log2.Anchor().Seq)
	}
}

func dbPath(s *Store) string {
	var name string
	_ = s.db.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&name)
	return name
}

func TestDuplicateGapAndConflict(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	d, _ := s.Acquire(context.Background())
	mem := &trace.Memory{}
	log := trace.NewLog(trace.LogOptions{Session: "s-test", Sinks: []trace.Sink{mem}})
	for i := 0; i < 3; i++ {
		emitStep(log, i)
	}
	evs := mem.Events()
	for _, e := range evs {
		if err := d.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	// A duplicated record (a retried append) is taken once.
	if err := d.Append(evs[1]); err != nil {
		t.Fatalf("duplicate append: %v", err)
	}
	if got, _ := s.Events(0); len(got) != 3 {
		t.Fatalf("%d events after a duplicate, want 3", len(got))
	}
	bad := evs[1]
	bad.Hash = "other"
	if err := d.Append(bad); !errors.Is(err, ErrConflict) {
		t.Fatalf("conflicting append: %v", err)
	}
	gap := evs[2]
	gap.Seq = 9
	if err := d.Append(gap); !errors.Is(err, ErrGap) {
		t.Fatalf("gap: %v", err)
	}
}

// TestTornWAL cuts the write-ahead log in the middle of its last frame (a torn
// write when the machine died): the store opens, without the torn commit, and
// the chain still verifies.
func TestTornWAL(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := s.Acquire(context.Background())
	session(t, d, nil, 10)
	// Copy the WAL before the checkpoint that Close would run.
	wal, err := os.ReadFile(filepath.Join(dir, File+"-wal"))
	if err != nil {
		t.Fatal(err)
	}
	db, _ := os.ReadFile(filepath.Join(dir, File))
	s.Close()
	crash := t.TempDir()
	os.WriteFile(filepath.Join(crash, File), db, 0o600)
	os.WriteFile(filepath.Join(crash, File+"-wal"), wal[:len(wal)-100], 0o600)
	s2 := open(t, crash, Options{})
	st, err := s2.Load()
	if err != nil {
		t.Fatalf("open after a torn write: %v", err)
	}
	if st.Seq != 9 {
		t.Fatalf("after the torn write the store holds %d events, want 9 (the last commit torn)", st.Seq)
	}
}

func TestEditedEventIsRefused(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	d, _ := s.Acquire(context.Background())
	session(t, d, nil, 6)
	if _, err := s.db.Exec(`UPDATE events SET record = replace(record, '"goal":"g"', '"goal":"h"') WHERE seq = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); err == nil {
		t.Fatal("an edited event loaded")
	}
}

func TestMigrationFromV1(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Make it a version-1 store: no snapshots, answers or steers table.
	if _, err := s.db.Exec(`DROP TABLE snapshots; DROP TABLE answers; DROP TABLE steers; PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := open(t, dir, Options{SnapshotEvery: 2})
	d, err := s2.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if log := session(t, d, nil, 4); log.Halted() != nil {
		t.Fatal(log.Halted())
	}
	if st, _ := s2.Load(); st.FromSnapshot != 4 {
		t.Fatalf("migrated store: snapshot at %d, want 4", st.FromSnapshot)
	}
	if err := s2.PutAnswer("req_1", []byte(`{}`)); err != nil {
		t.Fatalf("migrated store: %v", err)
	}
	if _, err := s2.PutSteer(trace.SteerRequest{Kind: "ask", Message: "how far?"}); err != nil {
		t.Fatalf("migrated store: %v", err)
	}
	if _, err := s2.db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if _, err := Open(dir, Options{}); err == nil {
		t.Fatal("a store from a newer agentbox opened")
	}
}
