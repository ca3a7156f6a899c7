package cgroup

import (
	"errors"
	"fmt"
)

var (
	// ErrUnsupported is returned on systems without cgroups (every OS but Linux).
	ErrUnsupported = errors.New("cgroup: not supported on this system")
	// ErrInvalid is matched by every OptionError.
	ErrInvalid = errors.New("cgroup: invalid options")
	// ErrControllerMissing is matched by every ControllerError.
	ErrControllerMissing = errors.New("cgroup: required controller missing")
	// ErrExist means a group of that name already exists under the parent.
	ErrExist = errors.New("cgroup: group already exists")
	// ErrTimeout means Kill gave up with processes still in the group.
	ErrTimeout = errors.New("cgroup: processes remain after the kill timeout")
	// ErrNoFD means the group has no single directory to clone a child into (v1).
	ErrNoFD = errors.New("cgroup: clone-into-cgroup needs cgroup v2")
)

// OptionError rejects one field of Options (or an argument of Reap).
type OptionError struct {
	Field  string
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("cgroup: invalid %s: %s", e.Field, e.Reason)
}

func (e *OptionError) Unwrap() error { return ErrInvalid }

// ControllerError names a controller (or kernel interface) that a group needs and
// the host lacks. Callers fail closed on it rather than run without the limit.
type ControllerError struct {
	Controller string
	Reason     string
}

func (e *ControllerError) Error() string {
	return fmt.Sprintf("cgroup: controller %s unusable: %s", e.Controller, e.Reason)
}

func (e *ControllerError) Unwrap() error { return ErrControllerMissing }
