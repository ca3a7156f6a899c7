package mcp

import (
	"context"
	"encoding/base64"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/wire"
)

type execIn struct {
	envID
	client.ExecRequest
	Command string `json:"command,omitempty" jsonschema:"a shell command line, run as [\"sh\",\"-c\",command]; give command or argv, not both"`
}

// request is the API's request: argv as given, or command run by sh -c. Clients
// that cannot pass an array (MCP Inspector's CLI) use command.
func (in execIn) request() (client.ExecRequest, error) {
	r := in.ExecRequest
	switch {
	case in.Command != "" && len(r.Argv) > 0:
		return r, wire.BadRequest("give either argv or command, not both")
	case in.Command != "":
		r.Argv = []string{"sh", "-c", in.Command}
	case len(r.Argv) == 0:
		return r, wire.BadRequest(`give argv (["python3","-m","pytest"]) or command ("python3 -m pytest | tail")`)
	}
	return r, nil
}

// execSchema is execIn's schema with argv optional: command may replace it.
func execSchema() *jsonschema.Schema {
	s, err := jsonschema.For[execIn](nil)
	if err != nil {
		panic(err) // a static type
	}
	s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == "argv" })
	return s
}

// procRef names a background process.
type procRef struct {
	ID      string `json:"id" jsonschema:"environment id"`
	Process string `json:"process_id" jsonschema:"process id returned by exec_start"`
}

type startOut struct {
	ProcessID string `json:"process_id"`
}

type outputIn struct {
	procRef
	After       int64   `json:"after,omitempty" jsonschema:"return only events after this sequence number (the last_seq of the previous call)"`
	WaitSeconds float64 `json:"wait_seconds,omitempty" jsonschema:"how long to wait for a first event (default 5, at most 60)"`
}

// outputEvent is one event in exec_output's answer.
type outputEvent struct {
	Seq    int64  `json:"seq"`
	Kind   string `json:"kind" jsonschema:"stdout, stderr or exit"`
	Text   string `json:"text,omitempty" jsonschema:"the output; base64 if the base64 field is true"`
	Base64 bool   `json:"base64,omitempty" jsonschema:"whether text is base64 (output that is not UTF-8)"`
}

type outputOut struct {
	Events  []outputEvent  `json:"events"`
	LastSeq int64          `json:"last_seq" jsonschema:"pass as after to the next call"`
	Exited  bool           `json:"exited"`
	Result  *client.Result `json:"result,omitempty" jsonschema:"how the command ended, once it has"`
}

type stdinIn struct {
	procRef
	Data string `json:"data,omitempty" jsonschema:"text to write to the process's standard input"`
	EOF  bool   `json:"eof,omitempty" jsonschema:"close standard input after data"`
}

type signalIn struct {
	procRef
	client.SignalRequest
}

type okOut struct {
	OK bool `json:"ok"`
}

// maxOutputBytes bounds the output one exec_output call returns; the rest follows
// in the next call.
const maxOutputBytes = 256 << 10

func (t *tools) addExec(s *mcp.Server) {
	svc := t.d.Service
	add(t, s, &mcp.Tool{Name: "exec", Description: "Run a command in an environment and wait for it to end. Give argv, executed directly without a shell, or command, a shell command line run with sh -c. A non-zero exit or a limit is a result, not an error.",
		InputSchema: execSchema(), Annotations: hints("Run command", false, true, false)},
		func(in execIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in execIn) (*client.Result, error) {
			r, err := in.request()
			if err != nil {
				return nil, err
			}
			return svc.Exec(ctx, in.ID, r)
		})
	add(t, s, &mcp.Tool{Name: "exec_start", Description: "Start a command (argv, or a shell command line in command) in the background; read its output with exec_output, feed it with exec_stdin, end it with exec_signal, wait with exec_wait.",
		InputSchema: execSchema(), Annotations: hints("Start command", false, true, false)},
		func(in execIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in execIn) (startOut, error) {
			r, err := in.request()
			if err != nil {
				return startOut{}, err
			}
			id, err := svc.Start(ctx, in.ID, r)
			return startOut{ProcessID: id}, err
		})
	add(t, s, &mcp.Tool{Name: "exec_wait", Description: "Wait for a background command to end and return its result.",
		Annotations: hints("Wait for command", true, false, true)},
		func(in procRef) string { return procWhat(in.ID, in.Process) },
		func(ctx context.Context, in procRef) (*client.Result, error) {
			return svc.Wait(ctx, in.ID, in.Process)
		})
	add(t, s, &mcp.Tool{Name: "exec_output", Description: "Read a background command's output events after a sequence number, waiting up to wait_seconds for the first one. Call again with after=last_seq until exited is true.",
		Annotations: hints("Read command output", true, false, true)},
		func(in outputIn) string { return procWhat(in.ID, in.Process) },
		func(ctx context.Context, in outputIn) (outputOut, error) {
			return readOutput(ctx, svc, in)
		})
	add(t, s, &mcp.Tool{Name: "exec_stdin", Description: "Write to a background command's standard input, optionally closing it.",
		Annotations: hints("Write to command", false, false, false)},
		func(in stdinIn) string { return procWhat(in.ID, in.Process) },
		func(ctx context.Context, in stdinIn) (okOut, error) {
			err := svc.WriteStdin(ctx, in.ID, in.Process, []byte(in.Data), in.EOF)
			return okOut{OK: err == nil}, err
		})
	add(t, s, &mcp.Tool{Name: "exec_signal", Description: "Send a signal to a background command (TERM, KILL, INT, ...).",
		Annotations: hints("Signal command", false, true, false)},
		func(in signalIn) string { return procWhat(in.ID, in.Process) },
		func(ctx context.Context, in signalIn) (okOut, error) {
			err := svc.Signal(ctx, in.ID, in.Process, in.Signal)
			return okOut{OK: err == nil}, err
		})
}

// readOutput collects the events available after in.After: it waits for the first
// one (up to wait_seconds), then takes what follows without a pause, up to the exit
// event or maxOutputBytes.
func readOutput(ctx context.Context, svc Service, in outputIn) (outputOut, error) {
	wait := time.Duration(in.WaitSeconds * float64(time.Second))
	if wait <= 0 {
		wait = 5 * time.Second
	}
	wait = min(wait, time.Minute)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := svc.Events(ctx, in.ID, in.Process, in.After)
	if err != nil {
		return outputOut{}, err
	}
	out := outputOut{Events: []outputEvent{}, LastSeq: in.After}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	size := 0
	for size < maxOutputBytes {
		var ev client.Event
		var ok bool
		select {
		case ev, ok = <-ch:
		case <-timer.C:
			return out, nil
		case <-ctx.Done():
			return out, ctx.Err()
		}
		if !ok {
			return out, nil
		}
		oe := outputEvent{Seq: ev.Seq, Kind: ev.Kind}
		if utf8.Valid(ev.Data) {
			oe.Text = string(ev.Data)
		} else {
			oe.Text, oe.Base64 = base64.StdEncoding.EncodeToString(ev.Data), true
		}
		size += len(ev.Data)
		out.Events = append(out.Events, oe)
		out.LastSeq = ev.Seq
		if ev.Kind == client.EventExit {
			out.Exited, out.Result = true, ev.Result
			return out, nil
		}
		// After the first event, only take what is already there.
		timer.Reset(50 * time.Millisecond)
	}
	return out, nil
}
