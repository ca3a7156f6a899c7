package seccomp

import (
	"errors"
	"fmt"
)

var (
	// ErrUnknownSyscall: a Rule names a call that x86_64 does not have.
	ErrUnknownSyscall = errors.New("unknown x86_64 system call")
	// ErrInvalidRule: a Rule cannot be compiled as written (see RuleError).
	ErrInvalidRule = errors.New("invalid rule")
	// ErrTooLarge: the program exceeds what the kernel or a BPF jump can hold.
	ErrTooLarge = errors.New("seccomp program too large")

	// ErrUnsupported: Install was called on anything but linux/amd64.
	ErrUnsupported = errors.New("seccomp filter supported only on linux/amd64")
	// ErrNoNewPrivs: Install was called before no_new_privs was set on this thread.
	ErrNoNewPrivs = errors.New("no_new_privs is not set on the calling thread")
	// ErrThreadSync: another thread of the process could not take the filter.
	ErrThreadSync = errors.New("seccomp filter could not be applied to every thread")
)

// RuleError says which rule of a Policy Build rejected and why.
type RuleError struct {
	Index   int    // position in Policy.Rules
	Syscall string // the rule's Syscall
	Reason  string // what is wrong, for people
	Err     error  // ErrUnknownSyscall or ErrInvalidRule
}

func (e *RuleError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("rule %d (%s): %v", e.Index, e.Syscall, e.Err)
	}
	return fmt.Sprintf("rule %d (%s): %v: %s", e.Index, e.Syscall, e.Err, e.Reason)
}

func (e *RuleError) Unwrap() error { return e.Err }
