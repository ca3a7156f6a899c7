package coordinator

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/trace"
)

// session is one hosted session: its tenant, its journal, and its driver
// while one runs.
type session struct {
	id     string
	dir    string
	store  *journal.Store
	spec   Spec
	tenant *tenant

	mu        sync.Mutex
	cancel    func(error) // the running driver's; nil: none runs
	done      chan struct{}
	cancelled bool
	err       string // why the last driver could not run the session
}

// load opens a session of the state directory. One recorded for a tenant
// that is not configured (removed from the configuration since) is closed
// again and left on disk: nothing of it is served or resumed.
func (h *Host) load(id string) (*session, error) {
	dir := filepath.Join(h.cfg.StateDir, "sessions", id)
	st, err := journal.Open(dir, h.cfg.Journal)
	if err != nil {
		return nil, err
	}
	s := &session{id: id, dir: dir, store: st}
	name := config.LocalCoordinatorTenant // recorded before the coordinator had tenants
	err = st.Meta("tenant", &name)
	if errors.Is(err, journal.ErrNoSession) {
		err = nil
	}
	if err == nil {
		if s.tenant = h.tenants[name]; s.tenant == nil {
			err = fmt.Errorf("recorded for tenant %q, which is not configured: left on disk (%s), not resumed", name, dir)
		}
	}
	if err == nil {
		err = st.Meta("spec", &s.spec)
	}
	if err == nil {
		err = st.Meta("cancelled", &s.cancelled)
		if errors.Is(err, journal.ErrNoSession) {
			err = nil
		}
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return s, nil
}

// unfinished: the session has not ended and was not cancelled.
func (s *session) unfinished() bool {
	st, err := s.store.Load()
	return err == nil && st.End == nil && !s.cancelled
}

// Info is a session as the API shows it: its state folded from the journal.
type Info struct {
	ID   string `json:"id"`
	Goal string `json:"goal"`
	// State is running (a driver runs it), waiting (its driver waits for the
	// environment daemon to answer: Error says what it got), paused (for a
	// person: an unknown call, or an approval in approvals mode pause), ended,
	// cancelled, or failed (its driver could not run it: Error says why; the
	// next start of the coordinator tries again).
	State      string             `json:"state"`
	StopReason string             `json:"stop_reason,omitempty"`
	Detail     string             `json:"detail,omitempty"`
	Error      string             `json:"error,omitempty"`
	Seq        int64              `json:"seq"`
	Epoch      int64              `json:"epoch"`
	Step       int                `json:"step"`
	ToolCalls  int                `json:"tool_calls"`
	Usage      trace.Usage        `json:"usage"`
	Answer     string             `json:"answer,omitempty"`
	EnvID      string             `json:"environment_id,omitempty"`
	Unknown    []string           `json:"unknown,omitempty"`
	Awaiting   []journal.Awaiting `json:"awaiting"`
	Recoveries int                `json:"recoveries"`
	// GoalRevision is the goal's revision (agentbox sessions steer); Plan the
	// agent's plan, the items a correction or replacement left behind marked
	// stale; Subagents the tasks it delegated, each with its revision.
	GoalRevision int                `json:"goal_revision"`
	Plan         []trace.PlanItem   `json:"plan"`
	Subagents    []journal.Subagent `json:"subagents,omitempty"`
	// Diff is the workspace's last recorded change from its start: for an ended
	// session, its final diff.
	Diff string `json:"diff"`
}

// Session states.
const (
	StateRunning   = "running"
	StateWaiting   = "waiting"
	StatePaused    = "paused"
	StateEnded     = "ended"
	StateCancelled = "cancelled"
	StateFailed    = "failed"
)

func (h *Host) info(s *session) (Info, error) {
	st, err := s.store.Load()
	if err != nil {
		return Info{}, fmt.Errorf("coordinator: session %s: %w", s.id, err)
	}
	epoch, err := s.store.Epoch()
	if err != nil {
		return Info{}, err
	}
	var rec envRecord
	if err := s.store.Meta("env", &rec); err != nil && !errors.Is(err, journal.ErrNoSession) {
		return Info{}, err
	}
	s.mu.Lock()
	running, cancelled, why := s.cancel != nil, s.cancelled, s.err
	s.mu.Unlock()
	i := Info{ID: s.id, Goal: s.spec.Goal, Seq: st.Seq, Epoch: epoch, Step: st.Step, ToolCalls: st.ToolCalls, Usage: st.Usage,
		Answer: st.Answer, EnvID: rec.ID, Unknown: st.Unknown, Awaiting: st.Awaiting, Recoveries: st.Epochs,
		Diff: string(st.Workspace.Diff), Error: why, GoalRevision: st.Goal.Revision, Plan: st.Plan, Subagents: st.Subagents}
	if i.Awaiting == nil {
		i.Awaiting = []journal.Awaiting{}
	}
	if i.Plan == nil {
		i.Plan = []trace.PlanItem{}
	}
	switch {
	case st.End != nil:
		i.State, i.StopReason, i.Detail = StateEnded, st.End.StopReason, st.End.Detail
	case cancelled && !running:
		i.State = StateCancelled
	case running && why != "":
		i.State = StateWaiting
	case running:
		i.State = StateRunning
	case why != "":
		i.State = StateFailed
	default:
		i.State = StatePaused
	}
	return i, nil
}

// envRecord is the environment a session works in (meta "env").
type envRecord struct {
	ID string `json:"id"`
	// Owned: the coordinator created it, and destroys it when the session ends.
	Owned bool `json:"owned"`
}
