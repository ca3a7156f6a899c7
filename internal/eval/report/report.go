package report

import (
	"time"

	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/version"
)

// Report is the summary of one `agentbox eval` run: what ran, and per attempt how
// it ended. Its JSON form is report.json.
type Report struct {
	// Run is the run's id; with a task id and an attempt number it keys an attempt.
	Run    string `json:"run"`
	Suite  string `json:"suite"`  // "builtin", a directory or a JSONL file
	Policy string `json:"policy"` // e.g. "scripted:reference", "openai"
	Model  string `json:"model,omitempty"`
	// Isolation is the level the attempts' environments ran at: namespace or gvisor.
	Isolation  string    `json:"isolation,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	DurationMS int64     `json:"duration_ms"`
	// Interrupted is true when the run was cancelled before every attempt ended;
	// the attempts that did not finish are absent.
	Interrupted bool      `json:"interrupted"`
	Attempts    []Attempt `json:"attempts"` // sorted by task, then attempt
	Summary     Summary   `json:"summary"`
	// Tasks aggregates the attempts per task (Tasks), and PassAtK[k-1] is the
	// run's pass@k: the mean over the tasks of their unbiased estimate
	// (PassAtK), for k up to the fewest attempts of any task. Write fills both.
	Tasks   []TaskStats `json:"tasks,omitempty"`
	PassAtK []float64   `json:"pass_at_k,omitempty"`
	// Agentbox is the build that wrote the report (Write fills it in): a run is
	// reproduced with the same version and commit.
	Agentbox version.Info `json:"agentbox"`
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

	// Outcome is the attempt's result in one word (Classify); every attempt has
	// one and the summary counts each.
	Outcome    grade.Outcome `json:"outcome"`
	Resolved   bool          `json:"resolved"`
	Tampered   bool          `json:"tampered"`
	InfraError string        `json:"infra_error,omitempty"`
	// Error is why the attempt could not run at all (the agent's environment failed
	// to start, the results could not be written): an infra_error of the harness.
	Error string `json:"error,omitempty"`

	StopReason string  `json:"stop_reason"` // the agent's: done, max_steps, ...
	Steps      int     `json:"steps"`
	ToolCalls  int     `json:"tool_calls"`
	CostUSD    float64 `json:"cost_usd"`
	// CostUnknown is true when a model response of the attempt had no price
	// (a model missing from the price table, an external agent): CostUSD then
	// counts only what was priced, and the reports say "unknown". Write sets it
	// from the attempt's events.jsonl when the run did not.
	CostUnknown  bool  `json:"cost_unknown,omitempty"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	PatchBytes   int   `json:"patch_bytes"`
	// AgentExitCode is an external agent's exit status (-1: killed by a
	// signal), absent for the built-in agent; its ToolCalls are its API and MCP
	// requests.
	AgentExitCode *int `json:"agent_exit_code,omitempty"`

	AgentMS    int64 `json:"agent_ms"`
	GradeMS    int64 `json:"grade_ms"`
	DurationMS int64 `json:"duration_ms"`

	Verdict grade.Verdict `json:"verdict"`
}

// Classify returns the attempt's outcome, in this order of precedence:
// infra_error (the harness failed: Error or the verdict's InfraError), tampered,
// resolved, model_error (the agent's model could not be reached, so the agent
// did not really try), harness_error, unresolved.
func Classify(a Attempt) grade.Outcome {
	v := a.Verdict
	switch {
	case a.Error != "" || a.InfraError != "" || v.InfraError != "":
		return grade.InfraError
	case a.Tampered || v.Tampered:
		return grade.Tampered
	case a.Resolved:
		return grade.Resolved
	case a.StopReason == "model_error":
		return grade.ModelError
	case v.HarnessError != "":
		return grade.HarnessError
	}
	return grade.Unresolved
}

// outcome is the attempt's recorded outcome, or Classify's for a record
// without one.
func (a Attempt) outcome() grade.Outcome {
	if a.Outcome != "" {
		return a.Outcome
	}
	return Classify(a)
}

// Summary counts the attempts of a run: each attempt has one outcome, and every
// outcome is counted.
type Summary struct {
	Tasks         int `json:"tasks"`
	Attempts      int `json:"attempts"`
	Resolved      int `json:"resolved"`
	Unresolved    int `json:"unresolved"`
	Tampered      int `json:"tampered"`
	HarnessErrors int `json:"harness_errors"`
	InfraErrors   int `json:"infra_errors"`
	ModelErrors   int `json:"model_errors"`
	// TasksResolved counts tasks with at least one resolved attempt (pass@k with k
	// the number of attempts).
	TasksResolved int `json:"tasks_resolved"`
	// ResolvedRate is Resolved / Attempts: every attempt counts, so an attempt that
	// ends in an error of any kind counts as not resolved. It is the strict rate.
	ResolvedRate float64 `json:"resolved_rate"`
	// GradedRate is Resolved / (Attempts - HarnessErrors - InfraErrors -
	// ModelErrors): the rate over the attempts that were graded for what the
	// agent did. It leaves some out, so it is only ever shown beside ResolvedRate.
	GradedRate float64 `json:"graded_rate"`
	// CostUSD sums the known costs; CostUnknown counts the attempts whose cost
	// is unknown and so not in it.
	CostUSD     float64 `json:"cost_usd"`
	CostUnknown int     `json:"cost_unknown,omitempty"`
}

// Graded is the denominator of GradedRate.
func (s Summary) Graded() int { return s.Attempts - s.HarnessErrors - s.InfraErrors - s.ModelErrors }

// Summarize computes the summary of attempts.
func Summarize(attempts []Attempt) Summary {
	var s Summary
	tasks := map[string]bool{}
	for _, a := range attempts {
		s.Attempts++
		if a.CostUnknown {
			s.CostUnknown++
		} else {
			s.CostUSD += a.CostUSD
		}
		if _, seen := tasks[a.Task]; !seen {
			tasks[a.Task] = false
		}
		switch a.outcome() {
		case grade.Resolved:
			s.Resolved++
			tasks[a.Task] = true
		case grade.Unresolved:
			s.Unresolved++
		case grade.Tampered:
			s.Tampered++
		case grade.HarnessError:
			s.HarnessErrors++
		case grade.InfraError:
			s.InfraErrors++
		case grade.ModelError:
			s.ModelErrors++
		}
	}
	s.Tasks = len(tasks)
	for _, ok := range tasks {
		if ok {
			s.TasksResolved++
		}
	}
	if s.Attempts > 0 {
		s.ResolvedRate = float64(s.Resolved) / float64(s.Attempts)
	}
	if n := s.Graded(); n > 0 {
		s.GradedRate = float64(s.Resolved) / float64(n)
	}
	return s
}
