package agent

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/model"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

var (
	// ErrBudget is matched by every BudgetError.
	ErrBudget = errors.New("budget exhausted")
	// ErrNoPrice means a money budget is set but the model has no price, so what a
	// request costs cannot be known before it is sent.
	ErrNoPrice = errors.New("no price for the model: a money budget cannot be enforced")
)

// BudgetError says which budget cannot pay for an action.
type BudgetError struct {
	What string // "input tokens", "output tokens", "cost", "wall time"
	Need float64
	Left float64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s budget cannot pay: need %g, %g left", e.What, e.Need, e.Left)
}

func (e *BudgetError) Unwrap() error { return ErrBudget }

// Budget is what a session may still spend. Spending happens before the action:
// Reserve takes a model request's estimated cost out before the request is sent,
// Settle replaces the estimate with what the provider reported. It is safe for
// concurrent use.
type Budget struct {
	lim      Limits
	deadline time.Time

	mu        sync.Mutex
	steps     int
	toolCalls int
	used      trace.Usage // settled
	resIn     int64       // outstanding reservations
	resOut    int64
	resUSD    float64
	toolUSD   float64
}

func newBudget(lim Limits, deadline time.Time) *Budget {
	return &Budget{lim: lim, deadline: deadline}
}

// Limits returns the session's limits, defaults filled in.
func (b *Budget) Limits() Limits { return b.lim }

func (b *Budget) spendStep() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.steps >= b.lim.MaxSteps {
		return false
	}
	b.steps++
	return true
}

func (b *Budget) spendToolCall() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.toolCalls >= b.lim.MaxToolCalls {
		return false
	}
	b.toolCalls++
	return true
}

// charge pays a tool's declared money cost; it is Registry.Call's charge.
func (b *Budget) charge(c tool.Cost) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lim.MaxCostUSD > 0 {
		if left := b.lim.MaxCostUSD - b.costLocked(); c.USD > left {
			return &BudgetError{What: "cost", Need: c.USD, Left: left}
		}
	}
	b.toolUSD += c.USD
	return nil
}

func (b *Budget) costLocked() float64 { return b.used.CostUSD + b.resUSD + b.toolUSD }

// exhausted reports a token or money budget that is used up, so no model request
// could be paid for.
func (b *Budget) exhausted() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch l := b.lim; {
	case l.MaxInputTokens > 0 && int64(b.used.InputTokens)+b.resIn >= l.MaxInputTokens:
		return &BudgetError{What: "input tokens", Need: 1, Left: 0}
	case l.MaxOutputTokens > 0 && int64(b.used.OutputTokens)+b.resOut >= l.MaxOutputTokens:
		return &BudgetError{What: "output tokens", Need: 1, Left: 0}
	case l.MaxCostUSD > 0 && b.costLocked() >= l.MaxCostUSD:
		return &BudgetError{What: "cost", Need: 0, Left: 0}
	}
	return nil
}

// Reservation is what Reserve took out for one model request.
type Reservation struct {
	InputTokens  int64
	OutputTokens int64
	USD          float64
}

// minReplyTokens is the smallest reply worth paying for.
const minReplyTokens = 16

// Reserve takes the cost of a model request out of the budget before it is sent:
// estIn input tokens (an estimate) and up to maxOut output tokens, which it lowers
// to what the output-token and money budgets can pay for. It returns the
// reservation, whose OutputTokens the request must use as its cap.
func (b *Budget) Reserve(estIn, maxOut int, price *model.Price) (Reservation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.lim
	r := Reservation{InputTokens: int64(estIn), OutputTokens: int64(maxOut)}
	if l.MaxInputTokens > 0 {
		if left := l.MaxInputTokens - int64(b.used.InputTokens) - b.resIn; r.InputTokens > left {
			return Reservation{}, &BudgetError{What: "input tokens", Need: float64(r.InputTokens), Left: float64(left)}
		}
	}
	if l.MaxOutputTokens > 0 {
		left := l.MaxOutputTokens - int64(b.used.OutputTokens) - b.resOut
		if left < minReplyTokens {
			return Reservation{}, &BudgetError{What: "output tokens", Need: minReplyTokens, Left: float64(left)}
		}
		r.OutputTokens = min(r.OutputTokens, left)
	}
	if l.MaxCostUSD > 0 {
		if price == nil {
			return Reservation{}, ErrNoPrice
		}
		left := l.MaxCostUSD - b.costLocked()
		in := float64(r.InputTokens) * price.InputPerMTok / 1e6
		if price.OutputPerMTok > 0 {
			afford := math.Floor((left - in) * 1e6 / price.OutputPerMTok)
			if afford < minReplyTokens {
				return Reservation{}, &BudgetError{What: "cost", Need: in + minReplyTokens*price.OutputPerMTok/1e6, Left: left}
			}
			r.OutputTokens = min(r.OutputTokens, int64(afford))
		} else if in > left {
			return Reservation{}, &BudgetError{What: "cost", Need: in, Left: left}
		}
		r.USD = in + float64(r.OutputTokens)*price.OutputPerMTok/1e6
	}
	b.resIn += r.InputTokens
	b.resOut += r.OutputTokens
	b.resUSD += r.USD
	return r, nil
}

// Settle replaces a reservation with what was actually used.
func (b *Budget) Settle(r Reservation, actual trace.Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resIn -= r.InputTokens
	b.resOut -= r.OutputTokens
	b.resUSD -= r.USD
	b.used.Add(actual)
}

// Used returns the settled model usage, with the money tools were charged.
func (b *Budget) Used() trace.Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.used
	u.CostUSD += b.toolUSD
	return u
}

// before is what the trace records as budget_before.
func (b *Budget) before(now time.Time) trace.Budget {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.lim
	out := trace.Budget{
		StepsLeft: l.MaxSteps - b.steps, ToolsLeft: l.MaxToolCalls - b.toolCalls,
		InputTokensLeft: -1, OutputTokensLeft: -1, CostLeftUSD: -1,
		WallLeftMS: max(b.deadline.Sub(now).Milliseconds(), 0),
	}
	if l.MaxInputTokens > 0 {
		out.InputTokensLeft = l.MaxInputTokens - int64(b.used.InputTokens) - b.resIn
	}
	if l.MaxOutputTokens > 0 {
		out.OutputTokensLeft = l.MaxOutputTokens - int64(b.used.OutputTokens) - b.resOut
	}
	if l.MaxCostUSD > 0 {
		out.CostLeftUSD = l.MaxCostUSD - b.costLocked()
	}
	return out
}

// share returns a subagent's limits: lim, each budget lowered to what b has
// left (a subagent spends its parent's budget, so delegation launders none of
// it), or an error when b has no step or tool call left to give.
func (b *Budget) share(lim Limits) (Limits, error) {
	lim = lim.withDefaults()
	b.mu.Lock()
	defer b.mu.Unlock()
	steps, calls := b.lim.MaxSteps-b.steps, b.lim.MaxToolCalls-b.toolCalls
	if steps <= 0 || calls <= 0 {
		return lim, &BudgetError{What: "steps and tool calls", Need: 1, Left: float64(min(steps, calls))}
	}
	lim.MaxSteps, lim.MaxToolCalls = min(lim.MaxSteps, steps), min(lim.MaxToolCalls, calls)
	lower := func(child *int64, parent, used int64) {
		if parent > 0 && (*child <= 0 || *child > parent-used) {
			*child = max(parent-used, 1)
		}
	}
	lower(&lim.MaxInputTokens, b.lim.MaxInputTokens, int64(b.used.InputTokens)+b.resIn)
	lower(&lim.MaxOutputTokens, b.lim.MaxOutputTokens, int64(b.used.OutputTokens)+b.resOut)
	if l := b.lim.MaxCostUSD; l > 0 && (lim.MaxCostUSD <= 0 || lim.MaxCostUSD > l-b.costLocked()) {
		lim.MaxCostUSD = max(l-b.costLocked(), 1e-9)
	}
	return lim, nil
}

// absorb adds what a subagent spent to its parent's budget.
func (b *Budget) absorb(steps, toolCalls int, used trace.Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.steps += steps
	b.toolCalls += toolCalls
	b.used.Add(used)
}

// restore sets what a resumed session had spent.
func (b *Budget) restore(steps, toolCalls int, used trace.Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.steps, b.toolCalls, b.used = steps, toolCalls, used
}

func (b *Budget) counts() (steps, toolCalls int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.steps, b.toolCalls
}
