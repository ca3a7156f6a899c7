package env

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/internal/runner"
)

// TestSpoolReopen: a spool reopened by a later process has the same events; a
// line torn by a writer that died in the write is cut off and the next append
// takes its place; a planted link is never followed.
func TestSpoolReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p1.events")
	s, err := createSpool(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{Seq: 1, Kind: EventStdout, Data: []byte("a\n")}, {Seq: 2, Kind: EventStderr, Data: []byte{0, 0xff, '\n'}},
		{Seq: 4, Kind: EventStdout, Data: []byte("after a lost one")}}
	for _, ev := range want {
		if err := s.append(ev); err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":5,"kind":"std`) // torn
	f.Close()

	s, err = openSpool(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.last() != 4 {
		t.Fatalf("last = %d after reopening, want 4", s.last())
	}
	got, err := s.read(s.offs, 0, len(s.seqs))
	if err != nil || len(got) != 3 || !bytes.Equal(got[1].Data, want[1].Data) || got[2].Seq != 4 {
		t.Fatalf("read = %+v, %v", got, err)
	}
	if i := s.after(2); i != 2 {
		t.Fatalf("after(2) = %d, want 2", i)
	}
	if err := s.append(Event{Seq: 5, Kind: EventExit, Result: &runner.Result{ExitCode: 3}}); err != nil {
		t.Fatal(err)
	}
	got, err = s.read(s.offs, s.after(4), len(s.seqs))
	if err != nil || len(got) != 1 || got[0].Result == nil || got[0].Result.ExitCode != 3 {
		t.Fatalf("after the torn line: %+v, %v", got, err)
	}
	if again, err := openSpool(path); err != nil || again.last() != 5 {
		t.Fatalf("reopened again: %v", err)
	} else {
		again.close()
	}

	link := filepath.Join(t.TempDir(), "p2.events")
	os.Symlink(path, link)
	if _, err := createSpool(link); err == nil {
		t.Fatal("createSpool followed a planted link")
	}
	if _, err := openSpool(link); err == nil {
		t.Fatal("openSpool followed a planted link")
	}
}
