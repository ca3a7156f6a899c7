package agent

import (
	"context"
	"fmt"

	"github.com/agentbox/agentbox/internal/model"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// DefaultSystemPrompt tells the model how the session works. What it may do is
// decided by the tool registry, not by this text.
const DefaultSystemPrompt = `You are a coding agent working in a sandboxed workspace with no network.
Use the tools to read the code, make the change the task asks for, and run the tests with test.run.
Paths are relative to the workspace root. Prefer patch.apply for edits: its old text must match the file exactly, once.
Every tool result is a JSON header ({ok, data, error, refs, truncated}) followed by the output. An error has a code,
whether retrying can help (retryable) and a suggested_action; do not repeat a call that failed the same way.
When test.run has passed after your last change, call task.finish with a one-paragraph summary. You cannot finish
before that: task.finish refuses.`

// DefaultMaxReplyTokens caps each reply when ModelPolicy.MaxOutputTokens is 0.
const DefaultMaxReplyTokens = 4096

// ModelPolicy asks a model for each action. One reply may carry several tool calls:
// they are returned one per step, and the model is asked again only once all of them
// have results. A policy serves one session.
type ModelPolicy struct {
	Client model.Client
	// Meter, if the client's stack reports to it (NewClient), records each HTTP
	// response as it arrives; without it the policy accounts from the final reply.
	Meter *Meter
	Model string
	// Label names the policy in traces; default "model".
	Label           string
	System          string
	MaxOutputTokens int
	Temperature     *float64
	// Prices price the model for the money budget (Reserve) and for responses the
	// adapter could not price.
	Prices model.PriceTable

	started   bool
	msgs      []model.Message
	tools     []model.ToolDef
	pending   []model.ToolCall
	calls     map[string]model.ToolCall
	answered  int
	results   []model.ToolResult
	requests  int
	reply     []model.ToolCall // the last reply's tool calls
	fed       map[string]bool  // the calls whose results the model was given
	revision  int              // the goal revision the conversation is at
	compacted int              // the turns State.Summary covers, as last shown
}

// Sub returns a fresh policy with p's model and settings and none of its
// conversation: a subagent's (agent.delegate), whose spending the same Meter
// records.
func (p *ModelPolicy) Sub() *ModelPolicy {
	return &ModelPolicy{Client: p.Client, Meter: p.Meter, Model: p.Model, Label: p.Name() + ":sub", System: p.System,
		MaxOutputTokens: p.MaxOutputTokens, Temperature: p.Temperature, Prices: p.Prices}
}

// Name implements Policy.
func (p *ModelPolicy) Name() string {
	if p.Label != "" {
		return p.Label
	}
	return "model"
}

// Next implements Policy.
func (p *ModelPolicy) Next(ctx context.Context, s *State) (Decision, error) {
	if !p.started {
		p.start(s)
	}
	for _, t := range s.History[p.answered:] {
		p.results = append(p.results, p.result(t))
	}
	p.answered = len(s.History)
	if s.GoalRevision != p.revision {
		p.steered(s)
	}
	if len(p.pending) > 0 {
		return p.pop(""), nil
	}
	if s.Summarized > p.compacted {
		p.compact(s)
	}
	if len(p.results) > 0 {
		p.msgs = append(p.msgs, model.Message{Role: model.RoleTool, ToolResults: p.results})
		p.results = nil
	}
	resp, err := p.ask(ctx, s)
	if err != nil {
		return Decision{}, err
	}
	var plan []trace.PlanItem
	for round := 1; ; round++ {
		calls, pl, answers := takePlans(resp.ToolCalls)
		if pl != nil {
			plan = pl
		}
		resp.ToolCalls = calls
		if len(answers) == 0 || len(calls) > 0 || round == maxPlanReplies {
			p.results = append(p.results, answers...) // sent with the calls' results
			break
		}
		// The reply only revised the plan: it is answered and the model asked again.
		p.msgs = append(p.msgs, model.Message{Role: model.RoleTool, ToolResults: answers})
		if resp, err = p.ask(ctx, s); err != nil {
			return Decision{}, err
		}
	}
	d, err := p.decide(resp)
	d.Plan = plan
	return d, err
}

// decide turns the model's reply into the step's decision: its first tool
// call (the others are queued), or a stop.
func (p *ModelPolicy) decide(resp model.Response) (Decision, error) {
	if len(resp.ToolCalls) == 0 {
		why := "the model ended its turn without calling a tool"
		switch resp.StopReason {
		case model.StopRefusal:
			why = "the model refused"
		case model.StopMaxTokens:
			why = "the model's reply was cut at its token limit"
		}
		return Decision{Stop: true, Reason: why, Text: resp.Text}, nil
	}
	p.pending, p.reply = resp.ToolCalls, resp.ToolCalls
	p.calls = map[string]model.ToolCall{}
	for _, c := range resp.ToolCalls {
		p.calls[c.ID] = c
	}
	return p.pop(resp.Text), nil
}

func (p *ModelPolicy) start(s *State) {
	p.started = true
	if p.System == "" {
		p.System = DefaultSystemPrompt
	}
	if p.MaxOutputTokens <= 0 {
		p.MaxOutputTokens = DefaultMaxReplyTokens
	}
	p.msgs = []model.Message{{Role: model.RoleUser, Text: s.Goal}}
	for _, d := range s.Tools {
		p.tools = append(p.tools, model.ToolDef{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema})
	}
	p.tools = withPlanTool(p.tools)
	if len(s.Plan) > 0 { // a resumed session's
		p.msgs[0].Text += "\n\n" + renderPlan(s.Plan)
	}
}

// Queued implements Queued: the reply's tool calls not yet made.
func (p *ModelPolicy) Queued() []Decision {
	var out []Decision
	for _, c := range p.pending {
		d := Decision{Tool: c.Name, Args: c.Args, CallID: c.ID}
		if c.ArgsErr != nil {
			d.Args, d.ArgsError = nil, c.ArgsErr.Error()
		}
		out = append(out, d)
	}
	return out
}

func (p *ModelPolicy) pop(text string) Decision {
	c := p.pending[0]
	p.pending = p.pending[1:]
	d := Decision{Tool: c.Name, Args: c.Args, CallID: c.ID, Text: text}
	if c.ArgsErr != nil {
		d.Args, d.ArgsError = nil, c.ArgsErr.Error()
	}
	return d
}

// steered tells the model its goal changed (a person steered the session): the
// calls of its last reply with no result it may see (not made, or made under
// the old goal and stale) are answered as discarded, the rest of the reply is
// dropped, and the goal as it now stands follows as the person's message.
func (p *ModelPolicy) steered(s *State) {
	p.revision = s.GoalRevision
	for _, c := range p.reply {
		if !p.fed[c.ID] {
			p.results = append(p.results, model.ToolResult{CallID: c.ID, Name: c.Name, IsError: true,
				Content: fmt.Sprintf("not run, or its result discarded: the person changed the goal (revision %d)", s.GoalRevision)})
		}
	}
	p.pending, p.reply = nil, nil
	if len(p.results) > 0 {
		p.msgs = append(p.msgs, model.Message{Role: model.RoleTool, ToolResults: p.results})
		p.results = nil
	}
	p.msgs = append(p.msgs, model.Message{Role: model.RoleUser,
		Text: fmt.Sprintf("The person changed the goal (revision %d). The goal is now:\n%s\n\n%s", s.GoalRevision, s.Goal, renderPlan(s.Plan))})
}

// compact starts the conversation again from the goal and the session's
// compacted summary (State.Summary; Limits.CompactAfter), with the turns since
// it as lines of the same digest: the model's context no longer grows with
// every result.
func (p *ModelPolicy) compact(s *State) {
	p.compacted = s.Summarized
	text := fmt.Sprintf("%s\n\nThe work so far, compacted (one line per tool call):\n%s%s", s.Goal, s.Summary, digest(s.History[s.Summarized:]))
	p.msgs = []model.Message{{Role: model.RoleUser, Text: text}}
	p.results, p.reply = nil, nil
}

// result renders a step's outcome as the tool result the model reads, as data.
func (p *ModelPolicy) result(t Turn) model.ToolResult {
	if p.fed == nil {
		p.fed = map[string]bool{}
	}
	p.fed[t.Decision.CallID] = true
	if c, ok := p.calls[t.Decision.CallID]; ok && c.ArgsErr != nil {
		return model.ArgsErrorResult(c)
	}
	return model.ToolResult{CallID: t.Decision.CallID, Name: t.Decision.Tool, Content: tool.Render(t.Result),
		IsError: !t.Result.OK, Provenance: model.Provenance{Source: t.Result.Source, Truncated: t.Result.Truncated}}
}

// ask sends the conversation, reserving its cost first and settling it with what
// each response reported.
func (p *ModelPolicy) ask(ctx context.Context, s *State) (model.Response, error) {
	req := model.Request{Model: p.Model, System: p.System, Messages: p.msgs, Tools: p.tools, Temperature: p.Temperature}
	var price *model.Price
	if pr, ok := p.Prices.Lookup(p.Model); ok {
		price = &pr
	}
	est := model.EstimateTokens(req)
	res, err := s.Budget.Reserve(est, p.MaxOutputTokens, price)
	if err != nil {
		return model.Response{}, err
	}
	req.MaxOutputTokens = int(res.OutputTokens)
	p.requests++
	id := fmt.Sprintf("%s/m%d", s.Session, p.requests)
	s.Record(trace.ModelRequestStarted, "", trace.ModelRequest{RequestID: id, Model: p.Model, Messages: len(req.Messages),
		EstimatedInputTokens: est, MaxOutputTokens: req.MaxOutputTokens, ReservedUSD: res.USD})

	var used trace.Usage
	seen := 0
	record := func(m model.Meta) {
		seen++
		ev := p.responseEvent(id, m)
		s.Record(trace.ModelResponseReceived, "", ev)
		used.Add(trace.Usage{Requests: 1, InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens, CostUSD: ev.CostUSD})
	}
	if p.Meter != nil {
		detach := p.Meter.attach(record, func(ev model.RetryEvent) {
			s.Record(trace.ModelRetry, "", trace.ModelRetryInfo{RequestID: id, Attempt: ev.Attempt, ErrorClass: ev.ErrorClass,
				Status: ev.Status, ProviderReq: ev.RequestID, BackoffMS: ev.Backoff.Milliseconds(), RetryAfterMS: ev.RetryAfter.Milliseconds()})
		})
		defer detach()
	}
	resp, err := p.Client.Complete(ctx, req)
	if seen == 0 && resp.Meta.Status != 0 {
		record(resp.Meta)
	}
	s.Budget.Settle(res, used)
	if err != nil {
		return resp, fmt.Errorf("model %s: %w", p.Model, err)
	}
	if resp.Trimmed != nil {
		p.msgs = resp.Trimmed
	}
	if m := resp.Message(); m.Text != "" || len(m.ToolCalls) > 0 {
		p.msgs = append(p.msgs, m)
	}
	return resp, nil
}

func (p *ModelPolicy) responseEvent(id string, m model.Meta) trace.ModelResponse {
	cost := m.CostUSD
	if !m.PriceKnown {
		if c, ok := p.Prices.Cost(p.Model, m.Usage); ok {
			cost = c
		}
	}
	return trace.ModelResponse{RequestID: id, Provider: m.Provider, Model: m.Model, ProviderRequest: m.RequestID,
		ResponseID: m.ResponseID, Status: m.Status, Attempt: m.Attempt, Streamed: m.Streamed,
		InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens, CacheReadTokens: m.Usage.CacheReadTokens,
		CacheWriteTokens: m.Usage.CacheWriteTokens, UsageReported: m.UsageReported, CostUSD: cost,
		PriceKnown: m.PriceKnown || cost > 0, LatencyMS: m.Latency.Milliseconds(), TTFTMS: m.TTFT.Milliseconds(),
		ErrorClass: m.ErrorClass}
}
