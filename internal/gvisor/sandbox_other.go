//go:build !linux

package gvisor

import "syscall"

// Sandbox is one started command.
type Sandbox struct{}

func Start(Config, Stdio) (*Sandbox, error) { return nil, ErrUnsupported }
func (*Sandbox) Wait() Exit                 { return Exit{Err: ErrUnsupported} }
func (*Sandbox) Signal(syscall.Signal)      {}
func (*Sandbox) Stats() (Stats, error)      { return Stats{}, ErrUnsupported }
func (*Sandbox) Kill() error                { return ErrUnsupported }
func (*Sandbox) UpperDir() string           { return "" }
func (*Sandbox) Destroy() (int, error)      { return 0, nil }
func SystemDirs() []string                  { return nil }
