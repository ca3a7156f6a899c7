package main

import (
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/internal/quantity"
	"github.com/agentbox/agentbox/internal/runner"
)

// sizeValue is a byte-count flag that accepts K/M/G/T suffixes.
type sizeValue struct{ n *int64 }

func (v sizeValue) String() string {
	if v.n == nil || *v.n == 0 {
		return "0"
	}
	return quantity.FormatSize(*v.n)
}
func (v sizeValue) Set(s string) error {
	n, err := quantity.ParseSize(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}
func (v sizeValue) Type() string { return "bytes" }

// countValue is a non-negative whole-number flag.
type countValue struct{ n *int64 }

func (v countValue) String() string {
	if v.n == nil {
		return "0"
	}
	return quantity.FormatCount(*v.n)
}
func (v countValue) Set(s string) error {
	n, err := quantity.ParseCount(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}
func (v countValue) Type() string { return "count" }

// isolationValue is --isolation of agent, grade and eval: the level of every
// environment they create.
type isolationValue struct{ l *runner.Isolation }

func (v isolationValue) String() string {
	if v.l == nil || *v.l == "" {
		return string(runner.IsolationNamespace)
	}
	return string(*v.l)
}
func (v isolationValue) Set(s string) error {
	switch l := runner.Isolation(s); l {
	case runner.IsolationNamespace, runner.IsolationGvisor:
		*v.l = l
		return nil
	case runner.IsolationProcess:
		return errors.New("process runs no environment, and every command of an agent, a grade and an eval runs in one (a sandbox): use namespace or gvisor")
	}
	return fmt.Errorf("%q: use namespace or gvisor", s)
}
func (v isolationValue) Type() string { return "level" }

// isolationUsage is the help of isolationValue's flag.
const isolationUsage = "level of every environment: namespace, or gvisor (gVisor's kernel under every command; runsc in PATH; no network, rw mounts or templates)"
