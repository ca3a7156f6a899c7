//go:build !linux

package gvisor

import (
	"os"
	"syscall"
	"time"
)

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

// Env is a persistent sandbox.
type Env struct{}

// ExecConfig is one command of an Env.
type ExecConfig struct {
	Argv, Env        []string
	Dir              string
	CPU              Rlimit
	FileSize, NoFile uint64
}

// Process is a command running in an Env.
type Process struct{}

// ProcessExit is how a command ended.
type ProcessExit struct {
	ExitCode  int
	Signal    syscall.Signal
	User, Sys time.Duration
	MaxRSS    int64
	Err       error
}

func StartEnv(Config) (*Env, error)                   { return nil, ErrUnsupported }
func (*Env) Exec(ExecConfig, Stdio) (*Process, error) { return nil, ErrUnsupported }
func (*Env) Wait() Exit                               { return Exit{Err: ErrUnsupported} }
func (*Env) Stats() (Stats, error)                    { return Stats{}, ErrUnsupported }
func (*Env) Frozen(func() error) error                { return ErrUnsupported }
func (*Env) Pause() error                             { return ErrUnsupported }
func (*Env) Resume() error                            { return ErrUnsupported }
func (*Env) UpperDir() string                         { return "" }
func (*Env) WorkspaceDir() *os.File                   { return nil }
func (*Env) UID() int                                 { return -1 }
func (*Env) Destroy() (int, error)                    { return 0, nil }
func (*Process) Wait() ProcessExit                    { return ProcessExit{Err: ErrUnsupported} }
func (*Process) Signal(syscall.Signal)                {}
func (*Process) Kill() (int, error)                   { return 0, ErrUnsupported }
func (*Env) Pid() int                                 { return 0 }
func (*Env) StateDir() string                         { return "" }
