package report

import (
	"time"

	"github.com/agentbox/agentbox/internal/grade"
)

// Report is the summary of one `agentbox eval` run: what ran, and per attempt how
// it ended. Its JSON form is report.json.
type Report struct {
	// Run is the run's id; with a task id and an attempt number it keys an attempt.
	Run        string    `json:"run"`
	Suite      string    `json:"suite"`  // "builtin", a directory or a JSONL file
	Policy     string    `json:"policy"` // e.g. "scripted:reference", "openai"
	Model      string    `json:"model,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	DurationMS int64     `json:"duration_ms"`
	// Interrupted is true when the run was cancelled before every attempt ended;
	// the attempts that did not finish are absent.
	Interrupted bool      `json:"interrupted"`
	Attempts    []Attempt `json:"attempts"` // sorted by task, then attempt
	Summary     Summary   `json:"summary"`
}

// Attempt is one (task, attempt) of a run: the agent's session in its own
// environment, then the grading of its diff in a fresh one.
type Attempt struct {
	Task    string `json:"task"`
	Title   string `json:"title"`
	Attempt int    `json:"attempt"` // 1-based
	// Dir is the attempt's directory relative to the results directory. It holds
	// trace.jsonl (the agent's step trace), patch.diff (its final diff), grade.json
	// (the Verdict) and test.log (the graded test command's output).
	Dir string `json:"dir"`

	Resolved   bool   `json:"resolved"`
	Tampered   bool   `json:"tampered"`
	InfraError string `json:"infra_error,omitempty"`
	// Error is why the attempt could not run at all (the agent's environment failed
	// to start, the results could not be written).
	Error string `json:"error,omitempty"`

	StopReason   string  `json:"stop_reason"` // the agent's: done, max_steps, ...
	Steps        int     `json:"steps"`
	ToolCalls    int     `json:"tool_calls"`
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	PatchBytes   int     `json:"patch_bytes"`

	AgentMS    int64 `json:"agent_ms"`
	GradeMS    int64 `json:"grade_ms"`
	DurationMS int64 `json:"duration_ms"`

	Verdict grade.Verdict `json:"verdict"`
}

// Outcome is the attempt's one-word result for tables: resolved, tampered,
// infra_error, error or unresolved.
func (a Attempt) Outcome() string {
	if a.Error != "" {
		return "error"
	}
	return grade.Verdict{Resolved: a.Resolved, Tampered: a.Tampered, InfraError: a.InfraError}.Outcome()
}

// Summary counts the attempts of a run.
type Summary struct {
	Tasks       int `json:"tasks"`
	Attempts    int `json:"attempts"`
	Resolved    int `json:"resolved"`
	Tampered    int `json:"tampered"`
	InfraErrors int `json:"infra_errors"`
	Errors      int `json:"errors"`
	// TasksResolved counts tasks with at least one resolved attempt (pass@k with k
	// the number of attempts).
	TasksResolved int `json:"tasks_resolved"`
	// ResolvedRate is Resolved / (Attempts - InfraErrors - Errors): attempts the
	// harness failed say nothing about the agent.
	ResolvedRate float64 `json:"resolved_rate"`
	CostUSD      float64 `json:"cost_usd"`
}

// Summarize computes the summary of attempts.
func Summarize(attempts []Attempt) Summary {
	var s Summary
	tasks := map[string]bool{}
	for _, a := range attempts {
		s.Attempts++
		s.CostUSD += a.CostUSD
		if _, seen := tasks[a.Task]; !seen {
			tasks[a.Task] = false
		}
		switch a.Outcome() {
		case "error":
			s.Errors++
		case "infra_error":
			s.InfraErrors++
		case "tampered":
			s.Tampered++
		case "resolved":
			s.Resolved++
			tasks[a.Task] = true
		}
	}
	s.Tasks = len(tasks)
	for _, ok := range tasks {
		if ok {
			s.TasksResolved++
		}
	}
	if n := s.Attempts - s.InfraErrors - s.Errors; n > 0 {
		s.ResolvedRate = float64(s.Resolved) / float64(n)
	}
	return s
}
