package task

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// runConfig is how an imported task runs: a Spec with every field filled in.
type runConfig struct {
	Language          Language
	Setup             []string
	TestCommand       []string
	PublicTestCommand []string
	ResultFormat      ResultFormat
	Env               []string
	choice            Choice
}

// The commands of the frameworks, before their test files. pytest writes its own
// JUnit XML report where the grader reads results (ResultsVar), in the xunit1
// family, whose testcases carry their file: ids are then pytest's node ids. The
// cache provider stays off so that a run writes no .pytest_cache.
var (
	pytestCommand       = []string{"python3", "-m", "pytest", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "--junitxml=" + ResultsVar}
	pytestPublicCommand = []string{"python3", "-m", "pytest", "-p", "no:cacheprovider"}
	unittestCommand     = []string{"python3", "-m", "unittest", "-v"}
	goTestCommand       = []string{"go", "test", "-json", "-count=1"}
	nodeTestCommand     = []string{"node", "--test", "--test-reporter=tap"}
)

// newRunConfig fills sp in for a row whose base tree is in repo, whose test patch
// changes files and whose hidden files (the test patch applied) are hidden: the
// framework from sp or else Detect, the commands from the framework and the test
// patch's test files (as SWE-bench's harness runs just those), and for a Python
// src/ layout PYTHONPATH=src unless sp sets PYTHONPATH.
//
// An error caused by the test patch is an errTestPatch.
func newRunConfig(sp Spec, repo string, files []*gitdiff.File, hidden map[string][]byte) (*runConfig, error) {
	root, err := os.OpenRoot(repo)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	read := func(name string) ([]byte, error) {
		if b, ok := hidden[name]; ok {
			return b, nil
		}
		return root.ReadFile(name)
	}
	var changed []string
	for _, f := range files {
		changed = append(changed, f.NewName)
	}
	slices.Sort(changed)
	tests := map[string][]byte{}
	for _, name := range changed {
		if isTestFile(name) {
			tests[name] = hidden[name]
		}
	}

	rc := &runConfig{Setup: sp.Setup, Env: sp.Env}
	switch {
	case sp.Framework != "":
		rc.choice = Choice{sp.Framework, "given by the spec"}
	case sp.TestCommand != nil:
		rc.choice = Choice{Command, "the spec gives test_command"}
	default:
		all, err := treeFiles(repo)
		if err != nil {
			return nil, err
		}
		rc.choice = Detect(read, append(all, changed...), tests)
	}
	testFiles := slices.Sorted(func(yield func(string) bool) {
		for name := range tests {
			if !yield(name) {
				return
			}
		}
	})
	switch rc.choice.Framework {
	case Pytest:
		rc.Language, rc.ResultFormat = Python, JUnit
		rc.TestCommand = append(slices.Clone(pytestCommand), pyFiles(testFiles)...)
		rc.PublicTestCommand = pytestPublicCommand
	case PyUnittest:
		rc.Language, rc.ResultFormat = Python, Unittest
		mods := pyModules(testFiles)
		if len(mods) == 0 {
			return nil, errTestPatch{errors.New("changes no test*.py or *_test.py module for unittest to run; give a test_command in the spec")}
		}
		rc.TestCommand = append(slices.Clone(unittestCommand), mods...)
		rc.PublicTestCommand = unittestCommand
	case GoTest:
		rc.Language, rc.ResultFormat = Go, GoTestJSON
		rc.TestCommand = append(slices.Clone(goTestCommand), goPackages(testFiles)...)
		rc.PublicTestCommand = []string{"go", "test", "./..."}
	case NodeTest:
		rc.Language, rc.ResultFormat = Node, TAP
		rc.TestCommand = append(slices.Clone(nodeTestCommand), jsFiles(testFiles)...)
		rc.PublicTestCommand = []string{"node", "--test"}
	case Command:
		rc.Language = sp.language()
	default:
		return nil, fmt.Errorf("framework %q: use pytest, unittest, go, node or command", rc.choice.Framework)
	}
	if sp.Language != "" {
		rc.Language = sp.Language
	}
	if sp.TestCommand != nil {
		rc.TestCommand = sp.TestCommand
	}
	if sp.ResultFormat != "" {
		rc.ResultFormat = sp.ResultFormat
	}
	if sp.PublicTestCommand != nil {
		rc.PublicTestCommand = sp.PublicTestCommand
	}
	if rc.TestCommand == nil || rc.ResultFormat == "" {
		return nil, errors.New("the spec's framework command needs test_command and result_format")
	}
	if rc.Language == Python && !slices.ContainsFunc(rc.Env, func(kv string) bool { return strings.HasPrefix(kv, "PYTHONPATH=") }) {
		if pkg := srcPackage(repo); pkg != "" {
			rc.Env = append(slices.Clone(rc.Env), "PYTHONPATH=src")
			rc.choice.Reason += "; PYTHONPATH=src for the src/ layout (" + pkg + ")"
		}
	}
	return rc, nil
}

// errTestPatch is an error of newRunConfig that the row's test_patch causes.
type errTestPatch struct{ error }

// isTestFile reports whether a changed file is a test module of some framework.
func isTestFile(name string) bool {
	base := path.Base(name)
	switch {
	case strings.HasSuffix(base, ".py"):
		return strings.HasPrefix(base, "test") || strings.HasSuffix(base, "_test.py")
	case strings.HasSuffix(base, "_test.go"):
		return true
	case strings.HasSuffix(base, ".js") || strings.HasSuffix(base, ".mjs") || strings.HasSuffix(base, ".cjs"):
		return strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") || strings.HasPrefix(base, "test") ||
			slices.Contains(strings.Split(path.Dir(name), "/"), "test")
	}
	return false
}

func pyFiles(files []string) []string {
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, ".py") {
			out = append(out, f)
		}
	}
	return out
}

// pyModules turns test files into the dotted module names unittest imports.
func pyModules(files []string) []string {
	var out []string
	for _, f := range pyFiles(files) {
		out = append(out, strings.ReplaceAll(strings.TrimSuffix(f, ".py"), "/", "."))
	}
	return out
}

// goPackages returns the package directories of Go test files (./dir), or ./...
// when there are none.
func goPackages(files []string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		dir := "./" + path.Dir(f)
		if dir == "./." {
			dir = "."
		}
		if !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	if len(out) == 0 {
		return []string{"./..."}
	}
	return out
}

func jsFiles(files []string) []string {
	var out []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".py") && !strings.HasSuffix(f, ".go") {
			out = append(out, f)
		}
	}
	return out
}

// srcPackage returns src/NAME when repo has a Python package under src/ and
// none of that name at its root: the src layout, whose package imports only with
// src on sys.path.
func srcPackage(repo string) string {
	entries, err := os.ReadDir(filepath.Join(repo, "src"))
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Lstat(filepath.Join(repo, "src", e.Name(), "__init__.py")); err != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(repo, e.Name())); err == nil {
			continue
		}
		return "src/" + e.Name()
	}
	return ""
}

// treeFiles lists the files of repo, slash-separated, without .git.
func treeFiles(repo string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(repo, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}
