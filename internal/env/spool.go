package env

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"syscall"
)

// spool is a background command's events on disk, in the order they happened,
// one JSON line each: what Events replays. A client that resumes after any Seq
// gets every later event exactly once however long ago it was produced, and
// nothing is held in memory but the index. An event is written before anyone is
// told of it, so an event a client saw is always on disk.
//
// It is not synced: it outlives the daemon's process (a crash), not the machine.
type spool struct {
	f    *os.File
	seqs []int64 // Seq of each stored event, ascending
	offs []int64 // offs[i] is where event i begins; offs[len(seqs)] is the end
}

// createSpool creates path afresh (never following a link planted there).
func createSpool(path string) (*spool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("event spool: %w", err)
	}
	return &spool{f: f, offs: []int64{0}}, nil
}

// openSpool opens the spool an earlier process left at path and rebuilds its
// index. A last line written in part (its writer died in the write) is cut off:
// nobody was told of that event.
func openSpool(path string) (*spool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("event spool: %w", err)
	}
	s := &spool{f: f, offs: []int64{0}}
	r := bufio.NewReader(f)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF || (err == nil && json.Unmarshal(line, new(Event)) != nil) {
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("event spool %s: %w", path, err)
		}
		var ev Event
		json.Unmarshal(line, &ev)
		if n := len(s.seqs); n > 0 && ev.Seq <= s.seqs[n-1] {
			break // not ours: a spool's Seq only grows
		}
		off += int64(len(line))
		s.seqs = append(s.seqs, ev.Seq)
		s.offs = append(s.offs, off)
	}
	if err := f.Truncate(off); err != nil {
		f.Close()
		return nil, fmt.Errorf("event spool %s: %w", path, err)
	}
	return s, nil
}

// append writes ev at the end. The caller serialises appends.
func (s *spool) append(ev Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	end := s.offs[len(s.offs)-1]
	if _, err := s.f.WriteAt(b, end); err != nil {
		// A short write leaves a torn line past end, which the next append
		// overwrites and openSpool cuts off.
		return fmt.Errorf("event spool: %w", err)
	}
	s.seqs = append(s.seqs, ev.Seq)
	s.offs = append(s.offs, end+int64(len(b)))
	return nil
}

// last is the Seq of the last stored event, 0 for none.
func (s *spool) last() int64 {
	if len(s.seqs) == 0 {
		return 0
	}
	return s.seqs[len(s.seqs)-1]
}

// after returns the index of the first stored event with Seq greater than seq.
func (s *spool) after(seq int64) int {
	return sort.Search(len(s.seqs), func(i int) bool { return s.seqs[i] > seq })
}

// read decodes the stored events i to j-1. It may run beside append: the bytes
// of events already indexed never change.
func (s *spool) read(offs []int64, i, j int) ([]Event, error) {
	if i >= j {
		return nil, nil
	}
	buf := make([]byte, offs[j]-offs[i])
	if _, err := s.f.ReadAt(buf, offs[i]); err != nil {
		return nil, fmt.Errorf("event spool: %w", err)
	}
	evs := make([]Event, 0, j-i)
	for line := range bytes.Lines(buf) {
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("event spool: %w", err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != j-i {
		return nil, errors.New("event spool: index and file disagree")
	}
	return evs, nil
}

func (s *spool) close() error { return s.f.Close() }
