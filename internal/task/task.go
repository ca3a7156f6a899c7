package task

import (
	"time"

	"github.com/agentbox/agentbox/internal/egress"
)

// Language is the language of a task's code; it selects the environment the grader
// sets up (see Env) and nothing else.
type Language string

const (
	Python Language = "python"
	Go     Language = "go"
	Node   Language = "node"
)

// ResultFormat names how a task's test command reports results (see Parse).
type ResultFormat string

const (
	// JUnit is a JUnit XML file written to $AGENTBOX_RESULTS by the judge (or a
	// hidden runner).
	JUnit ResultFormat = "junit"
	// GoTestJSON is the standard output of `go test -json`. The code under test
	// shares that output; nothing vouches for it but canaries (package canary).
	GoTestJSON ResultFormat = "go-test-json"
	// TAP is Test Anything Protocol on standard output. Nothing vouches for it: use
	// it only for test commands whose output the code under test cannot reach.
	TAP ResultFormat = "tap"
	// Unittest is the verbose log (-v) of Python's unittest runner on standard
	// error: "test_x (module.Class.test_x) ... ok" lines, as Django's runtests.py
	// and python -m unittest -v print them.
	Unittest ResultFormat = "unittest"
	// ExitCode is one pass/fail verdict from the exit status of the test command.
	ExitCode ResultFormat = "exit-code"
)

// ResultsVar in an argument of setup or test_command is replaced by the path of
// the results file the grader reads for junit ($AGENTBOX_RESULTS): a native
// runner is told where to write it, as in --junitxml=${AGENTBOX_RESULTS}.
const ResultsVar = "${" + EnvResults + "}"

// ExitCodeID is the only test id of a task whose result format is exit-code.
const ExitCodeID = "exit-code"

// Defaults for limits a task.yaml leaves out.
const (
	DefaultTimeout = 5 * time.Minute
	DefaultMemory  = 2 << 30
	DefaultPids    = 512
)

// DefaultPublicTestCommand returns the public test command of a language's tasks
// whose task.yaml names none: the language's usual way of running every test.
func DefaultPublicTestCommand(lang Language) []string {
	switch lang {
	case Python:
		return []string{"python3", "-B", "-m", "unittest", "-v"}
	case Go:
		return []string{"go", "test", "./..."}
	case Node:
		return []string{"node", "--test"}
	}
	return nil
}

// Limits bound one run of a task's setup or test command.
type Limits struct {
	Timeout time.Duration // wall clock
	Memory  int64         // bytes
	Pids    int64         // processes and threads
}

// Task is one loaded and validated task directory. Paths are absolute and free of
// symlinks; repository-relative names (HiddenFiles, test ids, globs) use slashes.
type Task struct {
	ID        string
	Title     string
	Statement string // what the agent is told
	Language  Language

	Dir    string // the task directory
	Repo   string // Dir/repo: the starting code the agent gets
	Hidden string // the hidden tests, copied over the repository only to grade

	// HiddenFiles lists the regular files and symlinks under Hidden, relative to it:
	// each lands at the same path in the repository when grading.
	HiddenFiles []string
	// PublicTests are globs naming the test files in Repo the agent can see.
	PublicTests []string
	// ProtectedGlobs are every glob Protected matches: DefaultProtected, the public
	// tests, the task's own protected list and the hidden files.
	ProtectedGlobs []string

	// Environment is the root file system of the agent's and the grader's
	// environments (task.yaml environment: a template name or a build spec).
	Environment Environment
	Setup       []string       // argv run from the repository root before the tests; may be nil
	Network     *egress.Policy // what Setup may reach (nil: nothing); the tests never have one
	TestCommand []string       // argv run from the repository root
	// Environ holds KEY=VALUE variables added to the environment of every command
	// of the task (setup, tests, the agent's public tests), e.g. PYTHONPATH=src.
	Environ []string
	// PublicTestCommand is the argv the agent's test tool runs from the repository
	// root to see the public tests; DefaultPublicTestCommand when task.yaml has none.
	// Nothing vouches for its output: it informs the agent and never grades.
	PublicTestCommand []string
	ResultFormat      ResultFormat
	FailToPass        []string // ids that fail on the starting code and pass once resolved
	PassToPass        []string // ids that pass on the starting code and must keep passing
	Limits            Limits
	Reference         string // a patch to Repo that resolves the task
	Metadata          map[string]any

	// Witnessed is true when agentbox's own runner produces the results (the hidden
	// files include agentbox_unittest.py, agentbox_judge.py or
	// agentbox_witness_test.go): they must then carry each run's nonce, and the exit
	// status must agree with them. Tasks run by their project's own framework
	// (pytest, unittest, go test, node --test) are not witnessed: their results are
	// read as the framework reports them (see the package documentation).
	Witnessed bool

	protected []pattern
}
