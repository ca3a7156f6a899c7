package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// Replay re-drives a recorded session through the loop: a policy that makes the
// recorded decisions (and spends the recorded model usage) and tools that return
// the recorded results without running anything. Nothing outside the process is
// touched. It returns how the replayed session ended and its trace, which Diverge
// can compare with the recording: a difference means the loop now behaves
// differently on the same evidence (a budget, the no-progress rules, stop logic).
func Replay(ctx context.Context, recorded []trace.Step) (*Result, []trace.Step, error) {
	if len(recorded) == 0 {
		return nil, nil, errors.New("agent: replay: empty trace")
	}
	info := recorded[0].Session
	if info == nil {
		return nil, nil, errors.New("agent: replay: the trace has no session line (its first line carries it)")
	}
	var lim Limits
	if err := json.Unmarshal(info.Limits, &lim); err != nil {
		return nil, nil, fmt.Errorf("agent: replay: limits: %w", err)
	}
	byStep := map[int]trace.Step{}
	for _, s := range recorded {
		if s.Step > 0 {
			byStep[s.Step] = s
		}
	}
	var defs []tool.Def
	for _, n := range info.Tools {
		defs = append(defs, tool.Def{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	proj := trace.NewProjector(nil)
	log := trace.NewLog(trace.LogOptions{Session: info.Session + "-replay", Sinks: []trace.Sink{proj}})
	rt := &replayTools{steps: byStep, defs: defs}
	res, err := Run(ctx, Options{Goal: info.Goal, Policy: &replayPolicy{steps: byStep, name: info.Policy, tools: rt},
		Tools: rt, Limits: lim, Log: log, Model: info.Model, EnvID: info.EnvID})
	if err != nil {
		return nil, nil, err
	}
	return res, proj.Steps(), nil
}

type replayPolicy struct {
	steps map[int]trace.Step
	name  string
	tools *replayTools
}

func (p *replayPolicy) Name() string { return "replay:" + p.name }

func (p *replayPolicy) Next(_ context.Context, s *State) (Decision, error) {
	rec, ok := p.steps[s.Step()]
	if !ok {
		return Decision{Stop: true, Reason: "the recording ends here"}, nil
	}
	p.tools.step = s.Step()
	if rec.Usage != (trace.Usage{}) {
		s.Budget.Settle(Reservation{}, rec.Usage)
	}
	if rec.Error != "" {
		err := errors.New("replayed: " + rec.Error)
		switch rec.ErrorClass {
		case "budget":
			err = fmt.Errorf("%w: replayed: %s", ErrBudget, rec.Error)
		case "canceled":
			err = fmt.Errorf("%w: replayed: %s", context.Canceled, rec.Error)
		}
		return Decision{}, err
	}
	if rec.Decision == nil {
		return Decision{Stop: true, Reason: "the recording has no decision here"}, nil
	}
	d := *rec.Decision
	d.Plan = rec.Plan // the loop stamps its revisions again
	return d, nil
}

// replayTools answers each call with the result recorded for its step.
type replayTools struct {
	steps map[int]trace.Step
	defs  []tool.Def
	step  int
	state tool.Snapshot
}

func (t *replayTools) Defs() []tool.Def              { return t.defs }
func (t *replayTools) Spec(string) (tool.Spec, bool) { return tool.Spec{}, false }
func (t *replayTools) Snapshot() tool.Snapshot       { return t.state }
func (t *replayTools) Call(_ context.Context, c tool.Call, _ func(tool.Cost) error) tool.Outcome {
	rec, ok := t.steps[t.step]
	if !ok || rec.Result == nil || rec.Decision == nil || rec.Decision.Tool != c.Tool {
		return tool.Outcome{Envelope: tool.Envelope{OK: false, Data: json.RawMessage("null"), Refs: []tool.Ref{},
			Error: tool.Errorf(tool.EINTERNAL, false, tool.ActStop, "replay diverged: no recorded result for %s at step %d", c.Tool, t.step)}}
	}
	t.state = rec.State
	return tool.Outcome{Envelope: *rec.Result, Done: rec.Done}
}
