package task

import (
	"path"
	"strings"
)

// defaultProtected is what every task protects, whatever it lists itself. Each entry
// is a way to change the verdict without fixing the code.
var defaultProtected = []string{
	// History an agent could mine, and files that change what `git diff` shows
	// (a "-diff" attribute hides a file's changes from review).
	".git", ".gitattributes", ".gitmodules",
	// CI configuration.
	".github", ".gitlab-ci.yml", ".circleci",
	// Where agentbox keeps its own files inside a repository.
	".agentbox",
	// Tests and their data.
	"tests", "test_*.py", "*_test.py", "*_test.go", "testdata",
	// Python test configuration and interpreter start-up hooks: a conftest.py or a
	// sitecustomize.py can rewrite results without touching a test.
	"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
	"sitecustomize.py", "usercustomize.py", "*.pth",
	// Compiled code that Python would load instead of the reviewed source.
	"__pycache__", "*.pyc", "*.pyo", "*.pyd", "*.so",
	// Go module and build configuration: go.mod sets the language version, godebug
	// settings, replace and toolchain directives; go.work and vendor/ redirect
	// imports; a .syso object is linked into the package unseen.
	"go.mod", "go.sum", "go.work", "go.work.sum", "vendor", "*.syso",
}

// DefaultProtected returns the globs every task protects in addition to its own.
func DefaultProtected() []string { return append([]string(nil), defaultProtected...) }

// Protected reports whether a patch may not create, change or delete name, a path
// relative to the repository root with slashes, as git names it (without git's
// "a/" or "b/" prefix). It holds when a protected glob matches name or one of its
// ancestor directories, so new files under a protected directory are protected
// too. Names that are empty, absolute, hold a NUL byte, or leave the repository
// are always protected.
func (t *Task) Protected(name string) bool {
	if name == "" || strings.ContainsRune(name, 0) || path.IsAbs(name) {
		return true
	}
	name = path.Clean(name)
	if name == "." || name == ".." || strings.HasPrefix(name, "../") {
		return true
	}
	segs := strings.Split(name, "/")
	for _, p := range t.protected {
		if p.matchesPrefix(segs) {
			return true
		}
	}
	return false
}
