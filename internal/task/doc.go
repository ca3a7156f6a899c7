// Package task defines agentbox's task format, loads and validates task
// directories, parses the results a task's test command produces, carries the
// built-in task suite, and imports SWE-bench instances as task directories. It
// runs nothing but git, and git only to import: applying an agent's patch,
// copying hidden tests in, sandboxing the test command and deciding a verdict are
// the grader's job. Load never modifies a task directory.
//
// # Task directory
//
// A task is a directory holding:
//
//	task.yaml       the description (fields below; unknown fields are rejected)
//	repo/           the starting code, given to the agent; .git is allowed only as
//	                a directory at its root (see Git history)
//	hidden/         hidden tests (the name is set by hidden_tests), never in the
//	                agent's environment; copied over the repository only to grade
//	solution.patch  the reference patch (the name is set by reference)
//
// The fields of task.yaml:
//
//	id             [A-Za-z0-9_.-]+, at most 64 characters, unique in a suite
//	title          one line
//	statement      what the agent is told: what is wrong, what behaviour is wanted,
//	               which files to edit; it never reveals the hidden tests
//	language       python | go | node
//	public_tests   globs of the test files in repo/ the agent sees; each must match;
//	               may be empty (every test is hidden)
//	hidden_tests   directory next to task.yaml, default "hidden"; non-empty
//	protected      extra globs a patch may not touch (see below)
//	setup          optional argv run from the repository root before the tests
//	network        optional {allow, allow_private, dns_override} (as agentbox run's
//	               --allow-host, --allow-private, --dns-override): what setup may
//	               reach through the environment's egress proxy, say a package
//	               index; needs setup. The tests never have a network: the grader
//	               denies everything once setup has exited
//	test_command   argv run from the repository root (no shell); ${AGENTBOX_RESULTS}
//	               in an argument is the results file (--junitxml=${AGENTBOX_RESULTS})
//	env            optional KEY=VALUE list for every command (setup, tests, the
//	               agent's public tests), e.g. [PYTHONPATH=src]; not PATH or AGENTBOX_*
//	public_test_command
//	               optional argv the agent's test tool runs from the repository root
//	               to see the public tests; default [python3, -B, -m, unittest, -v]
//	               for python, [go, test, ./...] for go. It informs the agent and
//	               never grades: the grader runs test_command
//	result_format  junit | go-test-json | unittest (the -v log on stderr) | tap |
//	               exit-code
//	fail_to_pass   test ids that fail on the starting code and pass once resolved;
//	               at least one
//	pass_to_pass   test ids that pass on the starting code and must keep passing
//	limits         timeout (a duration, default 5m), memory (a size such as 512M,
//	               default 2G), pids (default 512)
//	reference      a git-style unified diff relative to repo/ that resolves the task;
//	               Load checks that it applies exactly and touches nothing protected
//	metadata       free map
//
// Paths in task.yaml stay inside the task directory and do not go through
// symlinks; symlinks under repo/ and hidden/ must be relative and resolve inside
// their own tree (the grader copies each tree on its own).
//
// # Git history
//
// repo/ may hold a .git directory at its root so that the agent can read the
// project's history (git log, git blame). It is the agent's copy: it must hold
// history only up to the starting code, nothing an agent could mine for the
// answer (later commits, other branches, tags, remotes, reflogs, stashes), and no
// hooks; ImportSWEBench writes such a directory. Load walks it like the rest of
// repo/ (no special files, no symlinks leaving repo/) but cannot judge what the
// history contains: that is the task author's responsibility. A .git anywhere
// else, in any letter case, or a .git file or symlink at the root (which would
// point git outside the task) is rejected. ".git" is protected by default, so a
// patch cannot change it. Git runs only inside the agent's sandbox; host tools
// must not run git inside a task's repo/, whose .git/config is task content.
//
// # Test ids
//
// A test id is LOCATION::NAME in the naming of the result format:
//
//	junit         FILE::CLASS::METHOD or FILE::FUNCTION, FILE relative to the
//	              repository root: pytest's node id, built from a testcase's file,
//	              classname and name attributes (tests/test_billing.py::BoundaryTest::test_one_gram)
//	go-test-json  IMPORTPATH::TestName, subtests as TestName/sub (example.com/retry::TestDo)
//	tap           the test's description, or its number when it has none
//	exit-code     the single id "exit-code"
//
// A listed id that a run does not report did not pass.
//
// # Protected paths
//
// Protected(path) reports whether a patch may not create, change or delete a path.
// It matches DefaultProtected, the public tests, the protected list and every hidden
// file, against the path and each of its ancestor directories (so new files inside a
// protected directory are protected). Globs use path.Match syntax per segment, "**"
// for any number of segments, and are unanchored when they contain no slash
// ("conftest.py" matches at any depth). go.mod and go.sum are protected: they set
// the language version and godebug behaviour and can redirect imports or the
// toolchain, and no built-in Go task needs a new dependency. A task that needs to
// change them is out of scope for now.
//
// # Results contract
//
// The grader runs the test command in a fresh copy of repo/ with the agent's patch
// applied and the hidden tests copied over it (replacing, never following, whatever
// is at their paths). It adds Env, a fresh NewNonce in AGENTBOX_NONCE, the grade's
// seed in AGENTBOX_SEED and, for junit, AGENTBOX_RESULTS naming a file that does not exist yet in a directory the
// command can write; then it calls Parse with the exit status, the complete
// standard output (go-test-json, tap), the results file read without following
// links (junit), and, for a witnessed task (one run by agentbox's own runners,
// Task.Witnessed), the nonce. Parse rejects (ErrResults) a missing or malformed
// results file, a wrong nonce, a runner report of tampering, and, when witnessed
// or for go-test-json, an exit status that contradicts the results. A task run by its project's own
// framework is read as the framework reports it, whatever its exit status (pytest
// exits 1 when any test fails). Test ids match under any of SWE-bench's forms
// (Results.Find): a pytest node id, a dotted unittest id and Django's
// "test_m (module.Class)" reduce to the same TestKey.
//
// Every built-in task runs hidden/agentbox_judge.py (one file, builtin/agentbox_judge.py,
// written into each task's hidden/ by ExtractBuiltin) on its spec, hidden/judge_*.py;
// a Go task's spec builds a worker from hidden/agentbox_worker/ and names it as
// WORKER. The checks (test functions taking call) run in the judge's process, which
// never imports or links the code under test; the judge makes itself non-dumpable
// (its /proc files, memory and descriptors are closed to same-user processes),
// deletes its spec and itself from the repository, and calls the code under test in
// a worker process over a pipe (JSON, one call a line; the Python worker can also
// keep objects, so that checks can call methods, compare identities and pass a
// recording callback), with inputs of its own. The worker has no nonce, no seed and
// no results descriptor to forge with: the code under test has nothing to forge,
// whatever it reads in its own process. Inputs are drawn from EnvSeed, which the
// grader takes fresh for every grade and records in its verdict; each test gets a
// generator seeded with the seed and its name, so a grade is reproduced by its
// seed. Hidden property checks stay properties over those inputs, so an answer
// hard-coded for the examples fails them. Test ids are SPEC.py::test_name.
//
// What this does not stop: the worker links the code under test, so what it
// answers is what the code under test makes it answer; a patch that answers every
// call correctly (in whatever way) is a fix as far as the checks can tell. A
// worker can kill the judge (the run then has no results file, or one whose exit
// status contradicts it) and can write to the repository, which the grader copies
// the hidden files over again before every run.
//
// Tasks that are not built in (SWE-bench imports) run their own test command in
// the process of the code under test: nothing vouches for go-test-json output,
// which the code under test shares, and a junit file is only as good as the
// runner that wrote it. ImportSWEBench runs the project's own framework (see
// below), whose report carries no nonce: a native run's results are read as the
// framework wrote them, and go-test-json, pytest and unittest runs are checked
// with canaries by the grader (package canary).
//
// # SWE-bench import
//
// ImportSWEBench turns rows of a SWE-bench JSONL file into task directories, one
// per instance, from local git clones of the instances' repositories (it never
// touches the network). repo/ is the tree at base_commit with a sanitized .git
// (history up to base_commit only); hidden/ holds the post-test_patch version of
// every file the test_patch adds or modifies; public_tests are the modified test
// files that exist at base_commit;
// the gold patch is the reference. Every written directory passes Load. Git runs
// with explicit argv, a minimal environment and no system or global config.
//
// How a row's tests run is a Spec: from ImportOptions.Override (the command
// line's flags), else the Specs entry of its repository and version (a specs
// file, like SWE-bench's per-repository specs; "*" for any version), else Detect:
// go test -json for a Go module, node --test for a package, pytest (its own JUnit
// XML report through ${AGENTBOX_RESULTS}, node ids as test ids) where the
// project's configuration or tests use it, else python -m unittest -v. The
// commands run the test patch's test files only, as SWE-bench's harness does; a
// Python src/ layout gets PYTHONPATH=src. Imported reports the choice and why.
//
// # Built-in suite
//
// The built-in tasks (C01 parcel billing, C02 active-order filter, C03 per-tenant
// cache key, calc, G01 retry, G02 booking overlap, G03 LRU cache, J01 bill
// splitting and J02 range merging, all judged out of process) are embedded as
// txtar archives, since a Go task's repo/ holds a go.mod and Go files that the go
// command would otherwise take as part of this module. Builtin and ExtractBuiltin
// write them out as task directories.
package task
