package coordinator

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/policy"
)

// ErrInvalid wraps what is wrong with a request.
var ErrInvalid = errors.New("invalid request")

// Spec is a new session: its goal, agent policy, permissions, environment,
// budgets and how its approvals are answered. It is recorded in the session's
// journal (meta "spec") and read again on every start of its driver.
type Spec struct {
	Goal   string     `json:"goal"`
	Policy PolicySpec `json:"policy"`
	// Permissions is a permission policy (YAML or JSON, agentbox policy
	// default's format); empty: the built-in one.
	Permissions string `json:"permissions,omitempty"`
	// Grants are capabilities held from the start (write:src/**, tool:NAME).
	Grants []string `json:"grants,omitempty"`
	Env    EnvSpec  `json:"environment"`
	// Budgets bound the session (zero: agent's defaults).
	Budgets Budgets `json:"budgets,omitzero"`
	// Approvals is how an ask is answered: "wait" (the default: the driver waits
	// for an answer through the API up to the session's wall budget) or
	// "pause" (the session pauses at once; an answer through the API starts its
	// driver again).
	Approvals string `json:"approvals,omitempty"`
	// TestCommand is test.run's command (default python3 -B -m unittest -v).
	TestCommand []string `json:"test_command,omitempty"`
	// Ledger offers ledger.append, appending to a file of the session's own
	// directory: the scripted long mode's effect outside the sandbox.
	Ledger bool `json:"ledger,omitempty"`
}

// PolicySpec names the agent policy: scripted with its mode, or a model.
type PolicySpec struct {
	Name    string `json:"name"` // scripted, openai or anthropic
	Mode    string `json:"mode,omitempty"`
	Model   string `json:"model,omitempty"`
	BaseURL string `json:"base_url,omitempty"`
	Stream  bool   `json:"stream,omitempty"`
}

// EnvSpec is the environment a session works in: an existing one of the
// daemon (ID), left to its owner when the session ends, or a new one the
// coordinator creates from a workspace directory on the daemon's host (or a
// preset) and destroys when the session ends.
type EnvSpec struct {
	ID        string        `json:"id,omitempty"`
	Workspace string        `json:"workspace,omitempty"`
	Preset    string        `json:"preset,omitempty"`
	Template  string        `json:"template,omitempty"`
	Limits    client.Limits `json:"limits,omitzero"`
}

// Budgets are the session's limits, in the API's units.
type Budgets struct {
	MaxSteps        int     `json:"max_steps,omitempty"`
	MaxToolCalls    int     `json:"max_tool_calls,omitempty"`
	MaxInputTokens  int64   `json:"max_input_tokens,omitempty"`
	MaxOutputTokens int64   `json:"max_output_tokens,omitempty"`
	MaxCostUSD      float64 `json:"max_cost_usd,omitempty"`
	TimeoutSeconds  float64 `json:"timeout_seconds,omitempty"`
}

// Approval modes.
const (
	ApprovalsWait  = "wait"
	ApprovalsPause = "pause"
)

func (b Budgets) limits() agent.Limits {
	return agent.Limits{MaxSteps: b.MaxSteps, MaxToolCalls: b.MaxToolCalls, MaxInputTokens: b.MaxInputTokens,
		MaxOutputTokens: b.MaxOutputTokens, MaxCostUSD: b.MaxCostUSD, MaxWall: time.Duration(b.TimeoutSeconds * float64(time.Second))}
}

// check says what is wrong with a spec, naming the field; the policy itself
// is checked by the Host's Policy function.
func (s *Spec) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
	}
	if strings.TrimSpace(s.Goal) == "" {
		return bad("goal is empty: say what the agent is asked to do")
	}
	if s.Policy.Name == "" {
		return bad(`policy.name is empty: use scripted (with policy.mode), openai or anthropic`)
	}
	e := s.Env
	switch n := count(e.ID != "", e.Workspace != "", e.Preset != ""); {
	case n != 1:
		return bad("environment: give exactly one of id (an existing environment), workspace (a directory on the daemon's host) or preset")
	case e.ID != "" && (e.Template != "" || e.Limits != client.Limits{}):
		return bad("environment.id names an existing environment: template and limits are its own")
	}
	b := s.Budgets
	if b.MaxSteps < 0 || b.MaxToolCalls < 0 || b.MaxInputTokens < 0 || b.MaxOutputTokens < 0 || b.MaxCostUSD < 0 ||
		b.TimeoutSeconds < 0 || math.IsNaN(b.MaxCostUSD) || math.IsNaN(b.TimeoutSeconds) || b.TimeoutSeconds > 7*24*3600 {
		return bad("budgets must be non-negative numbers (timeout_seconds at most a week)")
	}
	switch s.Approvals {
	case "":
		s.Approvals = ApprovalsWait
	case ApprovalsWait, ApprovalsPause:
	default:
		return bad("approvals %q: use wait or pause", s.Approvals)
	}
	if _, err := s.permissions(); err != nil {
		return bad("%v", err)
	}
	return nil
}

// permissions are the session's permission layer, fresh.
func (s *Spec) permissions() (*agent.Permissions, error) {
	c := agent.PermissionConfig{Grants: s.Grants}
	if s.Permissions != "" {
		p, err := policy.Parse([]byte(s.Permissions))
		if err != nil {
			return nil, fmt.Errorf("permissions: %w", err)
		}
		c.Policy = p
	}
	p, err := agent.NewPermissions(c)
	if err != nil {
		return nil, fmt.Errorf("grants: %w", err)
	}
	return p, nil
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
