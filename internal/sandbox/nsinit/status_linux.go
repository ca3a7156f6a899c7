package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// stageError is a setup failure at a named stage ("mount /proc", "pivot_root").
type stageError struct {
	stage string
	err   error
}

func (e *stageError) Error() string { return e.stage + ": " + e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

// at wraps err (if any) with the stage it happened in.
func at(stage string, err error) error {
	if err == nil {
		return nil
	}
	return &stageError{stage: stage, err: err}
}

// atf is at with a formatted stage name.
func atf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &stageError{stage: fmt.Sprintf(format, args...), err: err}
}

// status writes Messages to the host and keeps the phase stamps.
type status struct {
	f        *os.File
	stamps   []Stamp
	uid      int
	capEff   uint64
	landlock string
}

// mark records that phase has just ended.
func (s *status) mark(phase string) {
	s.stamps = append(s.stamps, Stamp{Phase: phase, MonoNS: monoNow()})
}

func (s *status) send(m Message) {
	m.InitUID, m.InitCapEff, m.Stamps, m.Landlock = s.uid, s.capEff, s.stamps, s.landlock
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	// A failed write means the host is gone; the parent-death signal ends us anyway.
	_, _ = s.f.Write(append(b, '\n'))
}

// fail reports a setup error and closes the pipe (see run). Errors without a stage
// are reported as stage "init".
func (s *status) fail(err error) {
	defer s.f.Close()
	m := Message{Kind: KindError, Stage: "init", Detail: err.Error()}
	var se *stageError
	if errors.As(err, &se) {
		m.Stage = se.stage
		m.Detail = se.err.Error()
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		m.Errno = int(errno)
	}
	s.send(m)
}

// monoNow reads CLOCK_MONOTONIC, which the host reads too.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
