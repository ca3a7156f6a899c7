package grade

// Verdict is the outcome of grading one patch against one task. Its JSON form is
// the `agentbox grade --json` contract.
type Verdict struct {
	Resolved    bool     `json:"resolved"`
	Tampered    bool     `json:"tampered"`
	TamperPaths []string `json:"tamper_paths"`
	// PatchApplied is false when the patch could not be parsed or applied.
	PatchApplied bool `json:"patch_applied"`
	// ApplyMethod says how the patch applied: "strict" (every hunk exactly at its
	// line), "fuzzy" (a fallback was needed: Verdict.ApplyNotes says which, per
	// file), "empty" (nothing to apply) or "" (not applied).
	ApplyMethod string `json:"apply_method"`
	// ApplyNotes describes what a fuzzy apply did (hunks moved by an offset, or
	// matched ignoring whitespace), one line per adjustment.
	ApplyNotes []string `json:"apply_notes,omitempty"`
	FailToPass Split    `json:"fail_to_pass"`
	PassToPass Split    `json:"pass_to_pass"`
	// Seed is the seed the judge drew its random inputs from; grading again with
	// Options.Seed set to it (agentbox grade --seed) draws the same inputs.
	Seed int64 `json:"seed"`
	// Runs is how many times the test command ran (1 + Options.Reruns when the
	// first run's results were trusted).
	Runs int `json:"runs"`
	// Flaky lists the test ids whose outcome differed between runs. A flaky test
	// counts by its worst outcome.
	Flaky []string `json:"flaky,omitempty"`
	// Logs is the file holding the test command's output of every run (standard
	// output, then standard error), when Options.LogFile was set.
	Logs string `json:"logs,omitempty"`
	// Forged lists why the results of a run that the code under test could reach
	// (go test -json) are forged: a canary passed, a test the grader put in went
	// unreported, a test was reported that the run did not have, the exit status
	// contradicts the results. Tampered is then
	// set (with no TamperPaths) and Resolved is false.
	Forged []string `json:"forged,omitempty"`
	// Problems explains why the results were not trusted or a patch not applied.
	Problems []string `json:"problems,omitempty"`
	// InfraError is set when the grader itself failed (environment, harness
	// timeout); Resolved is then false and means nothing about the patch.
	InfraError string `json:"infra_error"`
	DurationMS int64  `json:"duration_ms"`
}

// Split lists the test ids of one group that passed and that did not.
type Split struct {
	Passed []string `json:"passed"`
	Failed []string `json:"failed"`
}

// Outcome is the verdict in one word: infra_error, tampered, resolved or
// unresolved (in that order of precedence).
func (v Verdict) Outcome() string {
	switch {
	case v.InfraError != "":
		return "infra_error"
	case v.Tampered:
		return "tampered"
	case v.Resolved:
		return "resolved"
	}
	return "unresolved"
}
