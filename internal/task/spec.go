package task

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Framework names how an imported task's tests run: the project's own test
// framework, run as the project runs it, or a command given as it is.
type Framework string

const (
	// Pytest runs python3 -m pytest on the test patch's test files, with pytest's
	// own JUnit XML report (--junitxml) as the results.
	Pytest Framework = "pytest"
	// PyUnittest runs python3 -m unittest -v on the test patch's test modules and
	// reads its verbose log (result format unittest).
	PyUnittest Framework = "unittest"
	// GoTest runs go test -json on the packages of the test patch's test files.
	GoTest Framework = "go"
	// NodeTest runs node --test on the test patch's test files, reporting TAP.
	NodeTest Framework = "node"
	// Command runs Spec.TestCommand as it is, reporting Spec.ResultFormat.
	Command Framework = "command"
)

// Spec says how the tasks imported for one repository and version run, like one
// entry of SWE-bench's per-repository specs. Every field is optional: a zero
// field is filled in from the framework, and the framework is detected from the
// repository when not given (see Detect).
type Spec struct {
	Framework         Framework    `yaml:"framework,omitempty" json:"framework,omitempty"`
	Language          Language     `yaml:"language,omitempty" json:"language,omitempty"`
	Setup             []string     `yaml:"setup,omitempty,flow" json:"setup,omitempty"`
	TestCommand       []string     `yaml:"test_command,omitempty,flow" json:"test_command,omitempty"`
	PublicTestCommand []string     `yaml:"public_test_command,omitempty,flow" json:"public_test_command,omitempty"`
	ResultFormat      ResultFormat `yaml:"result_format,omitempty" json:"result_format,omitempty"`
	// Env holds KEY=VALUE variables for every command of the task (task.yaml env).
	Env []string `yaml:"env,omitempty,flow" json:"env,omitempty"`
	// Timeout, Memory and Pids are the task's limits, as in task.yaml.
	Timeout string `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	Memory  string `yaml:"memory,omitempty" json:"memory,omitempty"`
	Pids    string `yaml:"pids,omitempty" json:"pids,omitempty"`
	// Environment is the tasks' root file system, written to their task.yaml
	// as it is: a template name, or a build spec (base, steps) that every
	// task of this repository and version shares, built once.
	Environment any `yaml:"environment,omitempty" json:"environment,omitempty"`
}

// merge returns s with the fields set in over replacing its own.
func (s Spec) merge(over Spec) Spec {
	if over.Framework != "" {
		s.Framework = over.Framework
	}
	if over.Language != "" {
		s.Language = over.Language
	}
	if over.Setup != nil {
		s.Setup = over.Setup
	}
	if over.TestCommand != nil {
		s.TestCommand = over.TestCommand
	}
	if over.PublicTestCommand != nil {
		s.PublicTestCommand = over.PublicTestCommand
	}
	if over.ResultFormat != "" {
		s.ResultFormat = over.ResultFormat
	}
	if over.Env != nil {
		s.Env = SetEnv(s.Env, over.Env...)
	}
	if over.Timeout != "" {
		s.Timeout = over.Timeout
	}
	if over.Environment != nil {
		s.Environment = over.Environment
	}
	if over.Memory != "" {
		s.Memory = over.Memory
	}
	if over.Pids != "" {
		s.Pids = over.Pids
	}
	return s
}

// Specs maps a repository ("owner/name") and a version (a row's "version", or
// "*" for any) to its Spec. The YAML form, a specs file:
//
//	pallets/jinja:
//	  "3.1":
//	    framework: pytest
//	    env: [PYTHONPATH=src]
//	  "*":
//	    framework: pytest
type Specs map[string]map[string]Spec

// ReadSpecs reads a specs file. Unknown fields are rejected; every spec is checked
// as far as it can be without a repository.
func ReadSpecs(r io.Reader) (Specs, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxTaskFile+1))
	if err != nil {
		return nil, fmt.Errorf("specs: %w", err)
	}
	if len(data) > maxTaskFile {
		return nil, fmt.Errorf("specs: larger than %d bytes", maxTaskFile)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Specs
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("specs: %w (the file maps owner/name to versions to specs; unknown fields are rejected)", err)
	}
	for _, repo := range slices.Sorted(maps.Keys(s)) {
		if !repoNameRE().MatchString(repo) {
			return nil, fmt.Errorf("specs: %q: want a repository as owner/name", repo)
		}
		for _, v := range slices.Sorted(maps.Keys(s[repo])) {
			if err := s[repo][v].check(); err != nil {
				return nil, fmt.Errorf("specs: %s version %s: %w", repo, v, err)
			}
		}
	}
	return s, nil
}

// ReadSpecsFile reads the specs file at name.
func ReadSpecsFile(name string) (Specs, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadSpecs(f)
}

// lookup returns the spec of repo at version: the exact version's, else "*"'s.
func (s Specs) lookup(repo, version string) (Spec, bool) {
	byVersion, ok := s[repo]
	if !ok {
		return Spec{}, false
	}
	if sp, ok := byVersion[version]; ok {
		return sp, true
	}
	sp, ok := byVersion["*"]
	return sp, ok
}

// check validates what a spec says on its own.
func (s Spec) check() error {
	switch s.Framework {
	case "", Pytest, PyUnittest, GoTest, NodeTest:
	case Command:
		if s.TestCommand == nil || s.ResultFormat == "" {
			return errors.New("framework command needs test_command and result_format")
		}
	default:
		return fmt.Errorf("framework %q: use pytest, unittest, go, node or command", s.Framework)
	}
	switch s.Language {
	case "", Python, Go, Node:
	default:
		return fmt.Errorf("language %q: use python, go or node", s.Language)
	}
	for _, c := range []struct {
		name string
		argv []string
	}{{"setup", s.Setup}, {"test_command", s.TestCommand}, {"public_test_command", s.PublicTestCommand}} {
		if c.argv != nil {
			if err := checkArgv(c.argv); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	if s.ResultFormat != "" {
		if err := checkFormat(s.language(), s.ResultFormat); err != nil {
			return fmt.Errorf("result_format: %w", err)
		}
	}
	for _, kv := range s.Env {
		if err := checkEnvVar(kv); err != nil {
			return fmt.Errorf("env: %w", err)
		}
	}
	if s.Timeout != "" {
		if d, err := time.ParseDuration(s.Timeout); err != nil || d <= 0 || d > maxTimeout {
			return fmt.Errorf("timeout %q: use a positive duration up to 24h such as 90s or 5m", s.Timeout)
		}
	}
	return nil
}

// language is the spec's language, or its framework's.
func (s Spec) language() Language {
	if s.Language != "" {
		return s.Language
	}
	switch s.Framework {
	case GoTest:
		return Go
	case NodeTest:
		return Node
	}
	return Python
}

// Choice is how one imported task runs, and why: the framework Detect found (or
// the spec or flag that set it), and the variables it added.
type Choice struct {
	Framework Framework `json:"framework"`
	Reason    string    `json:"reason"`
}

// Detect chooses the framework of a repository whose tree read gives (read
// returns a file's content, or an error when it does not exist) and whose test
// files (after the test patch) are tests: go for a Go module (go.mod at the root),
// node for a package (package.json), pytest where the project's configuration or
// tests use it (pytest.ini, a conftest.py, a [tool:pytest] or [tool.pytest...]
// section, a test file importing pytest), else unittest. It says why.
func Detect(read func(name string) ([]byte, error), files []string, tests map[string][]byte) Choice {
	has := func(name string) bool { _, err := read(name); return err == nil }
	contains := func(name, s string) bool {
		b, err := read(name)
		return err == nil && bytes.Contains(b, []byte(s))
	}
	switch {
	case has("go.mod"):
		return Choice{GoTest, "go.mod at the repository root"}
	case has("package.json"):
		return Choice{NodeTest, "package.json at the repository root"}
	case has("pytest.ini"):
		return Choice{Pytest, "pytest.ini"}
	case contains("setup.cfg", "[tool:pytest]"):
		return Choice{Pytest, "setup.cfg has [tool:pytest]"}
	case contains("tox.ini", "[pytest]"):
		return Choice{Pytest, "tox.ini has [pytest]"}
	case contains("pyproject.toml", "[tool.pytest"):
		return Choice{Pytest, "pyproject.toml has [tool.pytest.ini_options]"}
	}
	for _, f := range files {
		if f == "conftest.py" || strings.HasSuffix(f, "/conftest.py") {
			return Choice{Pytest, f}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(tests)) {
		b := tests[name]
		if bytes.Contains(b, []byte("import pytest")) || bytes.Contains(b, []byte("from pytest")) || bytes.Contains(b, []byte("from _pytest")) {
			return Choice{Pytest, name + " imports pytest"}
		}
	}
	return Choice{PyUnittest, "no pytest configuration, conftest.py or test importing pytest"}
}
