package grade

// Outcome is how one graded attempt ended, in one word. Every attempt has exactly
// one, and every one counts in a run's summary.
type Outcome string

const (
	// Resolved: every fail_to_pass and pass_to_pass test passed in every run, and
	// nothing in the patch was suspicious.
	Resolved Outcome = "resolved"
	// Unresolved: the suite ran, and a listed test failed, errored, was skipped or
	// did not run (Split.Missing), or the results were not trusted.
	Unresolved Outcome = "unresolved"
	// Tampered: the patch touched a protected path (TamperReason says how).
	Tampered Outcome = "tampered"
	// HarnessError: the task's suite could not be run as the task says (its setup
	// failed, its test command could not start, it ran no test, or none of the
	// task's test ids is among the tests it reported): the task or its
	// environment is at fault, not the patch alone.
	HarnessError Outcome = "harness_error"
	// InfraError: agentbox itself failed (an environment, a timeout of its own).
	InfraError Outcome = "infra_error"
	// ModelError: the agent's model could not be reached, so the agent did not
	// really try (set by package eval; the grader never sees a model).
	ModelError Outcome = "model_error"
)

// Outcomes lists every outcome, in the order summaries show them.
var Outcomes = []Outcome{Resolved, Unresolved, Tampered, HarnessError, InfraError, ModelError}

// Tamper reasons (Verdict.TamperReason).
const (
	// TamperProtected: the patch creates, changes or deletes a protected path.
	TamperProtected = "protected_path"
	// TamperForged: the run's results were forged (a canary test reported passing,
	// a witness line that the runner never printed). Reserved for the judges that
	// detect it.
	TamperForged = "forged"
)
