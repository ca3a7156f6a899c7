package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/agentbox/agentbox/internal/tool"
)

// memDaemonID is the campaign's daemon environment, whose processes outlive
// the drivers (memWork, like a local environment, dies with each).
const memDaemonID = "mem-daemon"

// memDaemon is the crash campaign's environment daemon for exec.run: its
// processes outlive every driver of a trial. A command's one effect is a line
// appended to a host ledger as it starts (it must run exactly once); it ends
// when a driver waits for it, so a driver killed after recording its process
// and before waiting leaves it running for the next driver to find (still
// running), and one killed after waiting leaves it ended.
type memDaemon struct {
	ledger string
	mu     sync.Mutex
	procs  map[string]bool // id: ended
}

func newMemDaemon(ledger string) *memDaemon {
	return &memDaemon{ledger: ledger, procs: map[string]bool{}}
}

func (d *memDaemon) start() (string, error) {
	f, err := os.OpenFile(d.ledger, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	id := fmt.Sprintf("p%d", len(d.procs)+1)
	if _, err := fmt.Fprintln(f, "ran", id); err != nil {
		return "", err
	}
	d.procs[id] = false
	return id, nil
}

func (d *memDaemon) end(id string) {
	d.mu.Lock()
	d.procs[id] = true
	d.mu.Unlock()
}

func memExecResult() tool.Result {
	return tool.Result{Data: map[string]any{"exit_code": 0}, Text: "[stdout]\nran\n[stderr]\n"}
}

// execSpec is exec.run on the daemon: Progress reported before the wait, and
// a Reattach that finds the process again.
func (d *memDaemon) execSpec() tool.Spec {
	return tool.Spec{Name: "exec.run", Scope: tool.ScopeExec, Effect: tool.EffectExec,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`),
		Handler: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			id, err := d.start()
			if err != nil {
				return tool.Result{}, err
			}
			if err := tool.ReportProgress(ctx, tool.Progress{Env: memDaemonID, Process: id}); err != nil {
				return tool.Result{}, err
			}
			d.end(id)
			return memExecResult(), nil
		},
		Reattach: func(_ context.Context, _ json.RawMessage, p tool.Progress) (bool, func(context.Context) (tool.Result, error), error) {
			d.mu.Lock()
			ended, ok := d.procs[p.Process]
			d.mu.Unlock()
			switch {
			case p.Env != memDaemonID:
				return false, nil, tool.ErrElsewhere
			case !ok:
				return false, nil, fmt.Errorf("%w: %s", tool.ErrGone, p.Process)
			}
			return !ended, func(context.Context) (tool.Result, error) {
				d.end(p.Process)
				return memExecResult(), nil
			}, nil
		}}
}

// withExec is the long session with one exec.run on the daemon after the
// history holds at turns: the inner policy sees the history without it, so
// its script goes on unchanged around it.
type withExec struct {
	Policy
	at int
}

func (p withExec) Next(ctx context.Context, s *State) (Decision, error) {
	inner := *s
	inner.History = nil
	ran := false
	for _, t := range s.History {
		if t.Decision.Tool == "exec.run" {
			ran = true
			continue
		}
		inner.History = append(inner.History, t)
	}
	if !ran && len(s.History) >= p.at {
		return call("exec.run", map[string]any{"command": "release the build"}), nil
	}
	return p.Policy.Next(ctx, &inner)
}
