package trace

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
)

// Stats are the metrics of one trace.
type Stats struct {
	Steps         int            `json:"steps"`
	ToolCalls     int            `json:"tool_calls"`
	ToolErrors    int            `json:"tool_errors"`
	ToolErrorRate float64        `json:"tool_error_rate"`
	CallsPerTool  map[string]int `json:"calls_per_tool"`
	// FailuresByCode counts failed tool calls by error code.
	FailuresByCode map[string]int `json:"failures_by_code"`
	ModelRequests  int            `json:"model_requests"`
	InputTokens    int            `json:"input_tokens"`
	OutputTokens   int            `json:"output_tokens"`
	CostUSD        float64        `json:"cost_usd"`
	StepP50MS      int64          `json:"step_latency_p50_ms"`
	StepP95MS      int64          `json:"step_latency_p95_ms"`
	StopReason     string         `json:"stop_reason,omitempty"`
	// Permission: calls the policy refused, approval requests (interruptions of
	// a person), items approved and denied and their rates, requests nobody
	// answered.
	PolicyDenials int     `json:"policy_denials"`
	Interruptions int     `json:"approval_requests"`
	Approved      int     `json:"approved"`
	Denied        int     `json:"denied"`
	ApprovalRate  float64 `json:"approval_rate"`
	DenialRate    float64 `json:"denial_rate"`
	Unanswered    int     `json:"unanswered"`
	// BudgetCurve is budget_before of every step.
	BudgetCurve []BudgetPoint `json:"budget_curve"`
}

// BudgetPoint is the budget left before one step.
type BudgetPoint struct {
	Step int `json:"step"`
	Budget
}

// ComputeStats computes the metrics of a trace.
func ComputeStats(steps []Step) Stats {
	s := Stats{CallsPerTool: map[string]int{}, FailuresByCode: map[string]int{}, BudgetCurve: []BudgetPoint{}}
	var lat []int64
	for _, st := range steps {
		if st.End != nil {
			s.StopReason = st.End.StopReason
		}
		if st.Step == 0 {
			continue
		}
		s.Steps++
		lat = append(lat, st.DurationMS)
		s.BudgetCurve = append(s.BudgetCurve, BudgetPoint{Step: st.Step, Budget: st.BudgetBefore})
		s.ModelRequests += st.Usage.Requests
		s.InputTokens += st.Usage.InputTokens
		s.OutputTokens += st.Usage.OutputTokens
		s.CostUSD += st.Usage.CostUSD
		if pm := st.Permission; pm != nil {
			if pm.Decision == "deny" {
				s.PolicyDenials++
			}
			s.Interruptions += pm.Requests
			s.Approved += pm.Approved
			s.Denied += pm.Denied
			s.Unanswered += pm.Unanswered
		}
		if st.Decision == nil || st.Decision.Stop || st.Result == nil {
			continue
		}
		s.ToolCalls++
		s.CallsPerTool[st.Decision.Tool]++
		if !st.Result.OK {
			s.ToolErrors++
			code := "unknown"
			if st.Result.Error != nil {
				code = string(st.Result.Error.Code)
			}
			s.FailuresByCode[code]++
		}
	}
	if s.ToolCalls > 0 {
		s.ToolErrorRate = float64(s.ToolErrors) / float64(s.ToolCalls)
	}
	if n := s.Approved + s.Denied; n > 0 {
		s.ApprovalRate, s.DenialRate = float64(s.Approved)/float64(n), float64(s.Denied)/float64(n)
	}
	s.StepP50MS, s.StepP95MS = percentile(lat, 50), percentile(lat, 95)
	return s
}

// percentile is the nearest-rank percentile.
func percentile(v []int64, p float64) int64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	rank := int(math.Ceil(p / 100 * float64(len(v))))
	return v[max(rank, 1)-1]
}

// WriteText prints the stats for a terminal: the summary, calls per tool (most
// first), failures by code and the budget curve.
func (s Stats) WriteText(w io.Writer) error {
	pw := &errWriter{w: w}
	pw.printf("steps %d  tool calls %d  tool errors %d (rate %.3f)  stop %s\n",
		s.Steps, s.ToolCalls, s.ToolErrors, s.ToolErrorRate, orDash(s.StopReason))
	pw.printf("model requests %d  input tokens %d  output tokens %d  cost $%.6f\n",
		s.ModelRequests, s.InputTokens, s.OutputTokens, s.CostUSD)
	pw.printf("step latency p50 %dms  p95 %dms\n", s.StepP50MS, s.StepP95MS)
	pw.printf("permissions: %d refused by policy  %d approval requests  %d approved  %d denied (approval rate %.3f, denial rate %.3f)  %d unanswered\n",
		s.PolicyDenials, s.Interruptions, s.Approved, s.Denied, s.ApprovalRate, s.DenialRate, s.Unanswered)
	pw.printf("\ncalls per tool:\n")
	for _, k := range byCount(s.CallsPerTool) {
		pw.printf("%6d %s\n", s.CallsPerTool[k], k)
	}
	pw.printf("\nfailures by code:\n")
	if len(s.FailuresByCode) == 0 {
		pw.printf("  (none)\n")
	}
	for _, k := range byCount(s.FailuresByCode) {
		pw.printf("%6d %s\n", s.FailuresByCode[k], k)
	}
	pw.printf("\nbudget curve:\n%6s %10s %10s %12s %12s %12s %10s\n", "step", "steps_left", "tools_left", "in_tok_left", "out_tok_left", "usd_left", "wall_ms")
	for _, b := range s.BudgetCurve {
		pw.printf("%6d %10d %10d %12d %12d %12s %10d\n", b.Step, b.StepsLeft, b.ToolsLeft, b.InputTokensLeft,
			b.OutputTokensLeft, usd(b.CostLeftUSD), b.WallLeftMS)
	}
	return pw.err
}

func usd(v float64) string {
	if v < 0 {
		return "-1"
	}
	return fmt.Sprintf("%.6f", v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func byCount(m map[string]int) []string {
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(f string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, f, a...)
	}
}
