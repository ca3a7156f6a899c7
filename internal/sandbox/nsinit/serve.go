package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
)

// A persistent init (Spec.Persistent) runs no command of its own. Once set up and
// confined it sends ReplyReady, with an O_PATH descriptor of its /workspace
// attached, and then serves Requests from the host on FDServe, a SOCK_SEQPACKET
// socket: one JSON document per message, stdio descriptors attached to exec
// requests with SCM_RIGHTS. Commands run concurrently, each in a session of its
// own; the init attributes every process of the sandbox to the command it
// descends from and reports each command's exit and usage.

// Request operations.
const (
	// OpExec starts a command. Three descriptors are attached: its stdin, stdout
	// and stderr; or, with Request.TTY, none: the init opens a pty of the
	// sandbox's devpts, makes its terminal the command's stdio and controlling
	// terminal, and attaches the master to ReplyStarted. The init answers
	// ReplyStarted or ReplyError.
	OpExec = "exec"
	// OpSignal sends Request.Signal to every live process of the command.
	OpSignal = "signal"
	// OpKill SIGKILLs every process of the command, its main process included,
	// until none is left, then answers ReplyGone. The command is forgotten after.
	// A command already gone (see ReplyGone) is answered ReplyGone at once.
	OpKill = "kill"
)

// Reply kinds.
const (
	ReplyReady   = "ready"   // set up; the /workspace descriptor is attached
	ReplyStarted = "started" // the command runs: Pid
	ReplyError   = "error"   // the command could not be started: Stage, Errno, Detail
	ReplyExit    = "exit"    // the command's main process exited: WaitStatus, Rusage
	// ReplyGone: no process of the command is left (or Survivors could not be
	// killed). It answers OpKill, or comes unasked right after ReplyExit when the
	// main process left nothing behind, which spares the host an OpKill.
	ReplyGone = "gone"
)

// MaxMessage bounds one Request or Reply. The host raises its socket's send buffer
// to fit it.
const MaxMessage = 1 << 20

// Request is one message from the host to a persistent init.
type Request struct {
	Op string `json:"op"`
	// ID names the command; the host picks it, unique per sandbox.
	ID uint64 `json:"id"`

	// Exec fields: as in Spec. Rlimits are applied to the command with prlimit
	// right after it starts; RLIMIT_CORE is always 0.
	Argv    []string `json:"argv,omitempty"`
	Env     []string `json:"env,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// TTY, when set, runs the command on a pty of this size.
	TTY *Winsize `json:"tty,omitempty"`

	// Signal is the signal number of OpSignal.
	Signal int `json:"signal,omitempty"`
}

// Winsize is a terminal's size in characters.
type Winsize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// Reply is one message from a persistent init to the host.
type Reply struct {
	Kind string `json:"kind"`
	ID   uint64 `json:"id,omitempty"`

	// ReplyStarted: the command's pid in the sandbox's pid namespace (and, for
	// a Request.TTY, the pty's master attached).
	Pid int `json:"pid,omitempty"`

	// ReplyError: as in Message.
	Stage  string `json:"stage,omitempty"`
	Errno  int    `json:"errno,omitempty"`
	Detail string `json:"detail,omitempty"`

	// ReplyExit: the main process's wait status and the usage of every process
	// of the command reaped so far (the main process's own reaped descendants
	// included). ReplyGone: the usage of the processes reaped since, and how many
	// processes could not be killed.
	WaitStatus uint32 `json:"wait_status,omitempty"`
	Rusage     Rusage `json:"rusage"`
	Survivors  int    `json:"survivors,omitempty"`

	// ReplyReady: as in Message.
	Landlock   string  `json:"landlock,omitempty"`
	InitUID    int     `json:"init_uid,omitempty"`
	InitCapEff uint64  `json:"init_cap_eff,omitempty"`
	Stamps     []Stamp `json:"stamps,omitempty"`
}

// EncodeRequest marshals r as one socket message of at most MaxMessage bytes.
func EncodeRequest(r *Request) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if len(b) > MaxMessage {
		return nil, fmt.Errorf("encode request: %d bytes exceeds %d", len(b), MaxMessage)
	}
	return b, nil
}

// DecodeRequest parses and checks a Request.
func DecodeRequest(b []byte) (*Request, error) {
	var r Request
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	switch r.Op {
	case OpExec:
		if len(r.Argv) == 0 || r.Argv[0] == "" {
			return nil, errors.New("decode request: empty argv")
		}
		if r.Dir == "" || r.Dir[0] != '/' {
			return nil, fmt.Errorf("decode request: working directory %q is not absolute", r.Dir)
		}
		if r.TTY != nil && (r.TTY.Rows == 0 || r.TTY.Cols == 0) {
			return nil, fmt.Errorf("decode request: terminal size %dx%d", r.TTY.Cols, r.TTY.Rows)
		}
	case OpSignal, OpKill:
	default:
		return nil, fmt.Errorf("decode request: unknown op %q", r.Op)
	}
	return &r, nil
}

// EncodeReply marshals a Reply.
func EncodeReply(r *Reply) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode reply: %w", err)
	}
	return b, nil
}

// DecodeReply parses a Reply.
func DecodeReply(b []byte) (*Reply, error) {
	var r Reply
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode reply: %w", err)
	}
	return &r, nil
}
