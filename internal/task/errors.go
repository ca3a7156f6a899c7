package task

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid is matched by every *Error: the task directory breaks the format.
	ErrInvalid = errors.New("invalid task")
	// ErrResults is matched by every *ResultsError: a run's results are missing,
	// malformed, or contradict themselves, so they must not be trusted.
	ErrResults = errors.New("untrustworthy test results")
)

// Error says what is wrong with a task: the file at fault, the task.yaml field
// (empty when the file as a whole is at fault) and what to do about it.
type Error struct {
	File  string
	Field string
	Err   error
}

func (e *Error) Error() string {
	s := e.File
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Is(target error) bool { return target == ErrInvalid }

// ResultsError says why the output of one run of a test command cannot be used.
type ResultsError struct {
	Format ResultFormat
	Reason string
	// Contradiction is set when the exit status disagrees with the results: a
	// runner was bypassed or its output forged.
	Contradiction bool
}

func (e *ResultsError) Error() string {
	return fmt.Sprintf("%s results: %s", e.Format, e.Reason)
}

func (e *ResultsError) Unwrap() error { return ErrResults }

func resultsErrorf(f ResultFormat, format string, args ...any) error {
	return &ResultsError{Format: f, Reason: fmt.Sprintf(format, args...)}
}
