package grade

// Verdict is the outcome of grading one patch against one task. Its JSON form is
// the `agentbox grade --json` contract.
type Verdict struct {
	// Outcome is the verdict in one word (see Outcome); the fields below say why.
	Outcome  Outcome `json:"outcome"`
	Resolved bool    `json:"resolved"`
	Tampered bool    `json:"tampered"`
	// TamperReason says how a tampered patch tampered: TamperProtected (the paths
	// are in TamperPaths) or TamperForged.
	TamperReason string   `json:"tamper_reason,omitempty"`
	TamperPaths  []string `json:"tamper_paths"`
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
	// Runs is how many times the hidden tests ran, each in a fresh environment
	// from the pristine repository (1 + Options.Reruns when every run worked).
	// With canaries each run is two runs of the test command, one per copy of
	// the hidden tests.
	Runs int `json:"runs"`
	// Isolation is the level the test runs' environments had (namespace or
	// gvisor), as the environment service reported it.
	Isolation string `json:"isolation,omitempty"`
	// Canaries is how many hidden tests ran with a canary (package canary): each
	// is a canary in one of the two copies and itself in the other.
	Canaries int `json:"canaries,omitempty"`
	// Flaky lists the test ids whose outcome differed between runs. A flaky test
	// counts by its worst outcome.
	Flaky []string `json:"flaky,omitempty"`
	// Logs is the file holding the test command's output of every run (standard
	// output, then standard error), when Options.LogFile was set.
	Logs string `json:"logs,omitempty"`
	// Forged lists why the results of a run that the code under test could reach
	// (go test -json, pytest, unittest) are forged: a canary passed, a test the grader put in went
	// unreported, a test was reported that the run did not have, the exit status
	// contradicts the results. Tampered is then
	// set (with no TamperPaths) and Resolved is false.
	Forged []string `json:"forged,omitempty"`
	// Problems explains why the results were not trusted or a patch not applied.
	Problems []string `json:"problems,omitempty"`
	// HarnessError is set when the task's suite could not be run as the task says
	// (its setup failed, its test command could not start, it reported no test, or
	// none of the task's ids); Resolved is then false.
	HarnessError string `json:"harness_error,omitempty"`
	// InfraError is set when the grader itself failed (environment, harness
	// timeout); Resolved is then false and means nothing about the patch.
	InfraError string `json:"infra_error"`
	DurationMS int64  `json:"duration_ms"`
}

// Split lists the test ids of one group that passed, that ran and did not pass
// (failed, errored or skipped), and that no run reported: a missing test did not
// run at all (the patch broke its collection, or its id does not map onto what
// the framework reports). Only Passed counts towards resolving.
type Split struct {
	Passed  []string `json:"passed"`
	Failed  []string `json:"failed"`
	Missing []string `json:"missing,omitempty"`
}

// classify returns the outcome the verdict's fields say, in this order of
// precedence: infra_error, tampered, harness_error, resolved, unresolved.
func (v Verdict) classify() Outcome {
	switch {
	case v.InfraError != "":
		return InfraError
	case v.Tampered:
		return Tampered
	case v.HarnessError != "":
		return HarnessError
	case v.Resolved:
		return Resolved
	}
	return Unresolved
}
