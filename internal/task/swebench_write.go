package task

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/quantity"
)

// sweFile is the task.yaml ImportSWEBench writes.
type sweFile struct {
	ID                string         `yaml:"id"`
	Title             string         `yaml:"title"`
	Statement         string         `yaml:"statement"`
	Language          Language       `yaml:"language"`
	PublicTests       []string       `yaml:"public_tests,omitempty"`
	TestCommand       []string       `yaml:"test_command,flow"`
	PublicTestCommand []string       `yaml:"public_test_command,flow,omitempty"`
	ResultFormat      ResultFormat   `yaml:"result_format"`
	FailToPass        []string       `yaml:"fail_to_pass"`
	PassToPass        []string       `yaml:"pass_to_pass,omitempty"`
	Limits            *fileLimits    `yaml:"limits,omitempty"`
	Reference         string         `yaml:"reference"`
	Metadata          map[string]any `yaml:"metadata"`
}

// importRow writes the task directory of one checked row. It builds the task in
// a temporary directory next to the final one, loads it, and only then renames
// it into place; on failure nothing is left behind.
func importRow(ctx context.Context, g *gitRunner, c *importConfig, row *sweRow) (dir string, err error) {
	final := filepath.Join(c.OutDir, row.InstanceID)
	tmp, err := os.MkdirTemp(c.OutDir, "."+row.InstanceID+".tmp-")
	if err != nil {
		return "", fmt.Errorf("import swe-bench: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	repo := filepath.Join(tmp, "repo")
	if err := g.export(ctx, row.clone, row.BaseCommit, repo); err != nil {
		return "", row.errf("base_commit", "export the tree: %w", err)
	}
	hidden, public, err := applyTestPatch(repo, row.testFiles)
	if err != nil {
		return "", row.errf("test_patch", "%w", err)
	}
	f, err := c.taskFile(row, hidden, public)
	if err != nil {
		return "", err
	}
	if c.runner {
		hidden[runnerName] = unittestRunner
	}
	if err := writeTask(tmp, f, hidden, row.Patch); err != nil {
		return "", row.errf("", "write the task: %w", err)
	}
	tk, err := Load(tmp)
	if err != nil {
		return "", row.loadError(tmp, err)
	}
	if tk.Statement != row.ProblemStatement {
		return "", row.errf("problem_statement", "did not survive the round trip through task.yaml")
	}
	// os.Rename never replaces a directory, so a task directory that appeared since
	// the check in ImportSWEBench is not overwritten.
	if err := os.Rename(tmp, final); err != nil {
		return "", row.errf("instance_id", "%w; remove it or import into another directory", err)
	}
	return final, nil
}

// loadError explains why the task built from row does not load, naming the row's
// field where one is at fault.
func (r *sweRow) loadError(dir string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return r.errf("", "the imported task does not load: %w", err)
	}
	rel, _ := filepath.Rel(dir, e.File)
	field := ""
	switch {
	case rel == "solution.patch":
		field = "patch"
	case rel == "repo" || strings.HasPrefix(rel, "repo"+string(filepath.Separator)):
		field = "base_commit"
	case strings.HasPrefix(rel, "hidden"):
		field = "test_patch"
	}
	where := filepath.ToSlash(rel)
	if e.Field != "" {
		where += " " + e.Field
	}
	return r.errf(field, "the imported task does not load: %s: %w", where, e.Err)
}

// applyTestPatch applies the test patch in memory to the base tree in repo and
// returns the patched content of every file it adds or changes, and globs matching
// exactly those of them that exist in the base tree.
func applyTestPatch(repo string, files []*gitdiff.File) (map[string][]byte, []string, error) {
	ap := applier{repo: repo, state: map[string]*[]byte{}}
	var public []string
	for _, f := range files {
		if err := noLinkAncestor(repo, f.NewName); err != nil {
			return nil, nil, err
		}
		if !f.IsNew && !f.IsCopy && ap.state[f.OldName] == nil {
			fi, err := os.Lstat(filepath.Join(repo, filepath.FromSlash(f.OldName)))
			if err == nil && fi.Mode().IsRegular() && !slices.Contains(public, f.OldName) {
				public = append(public, f.OldName)
			}
		}
		if err := ap.apply(f); err != nil {
			return nil, nil, err
		}
	}
	hidden := map[string][]byte{}
	for name, data := range ap.state {
		hidden[name] = *data // the test patch deletes nothing: checkTestPatch
	}
	slices.Sort(public)
	for i, p := range public {
		// A glob with a slash is anchored already; one without would match at any depth.
		if public[i] = escapeGlob(p); !strings.Contains(p, "/") {
			public[i] = "/" + public[i]
		}
	}
	return hidden, public, nil
}

// noLinkAncestor rejects a name whose parent directories in repo include a
// symlink: reading through it could reach outside the repository.
func noLinkAncestor(repo, name string) error {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		fi, err := os.Lstat(filepath.Join(repo, filepath.FromSlash(d)))
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s goes through the symlink %s", name, d)
		}
	}
	return nil
}

// taskFile builds the task.yaml of row.
func (c *importConfig) taskFile(row *sweRow, hidden map[string][]byte, public []string) (*sweFile, error) {
	f := &sweFile{
		ID:                row.InstanceID,
		Title:             sweTitle(row.InstanceID, row.ProblemStatement),
		Statement:         row.ProblemStatement,
		Language:          c.Language,
		PublicTests:       public,
		TestCommand:       c.TestCommand,
		PublicTestCommand: c.PublicTestCommand,
		ResultFormat:      c.ResultFormat,
		FailToPass:        row.FailToPass,
		PassToPass:        row.PassToPass,
		Reference:         "solution.patch",
		Metadata:          row.metadata,
	}
	if c.defaultCommand {
		dirs, err := testDirs(hidden)
		if err != nil {
			return nil, row.errf("test_patch", "%w", err)
		}
		f.TestCommand = append([]string{"python3", "-I", "-S", "-B", runnerName}, dirs...)
	}
	if l := c.Limits; l != (Limits{}) {
		f.Limits = &fileLimits{}
		if l.Timeout != 0 {
			f.Limits.Timeout = l.Timeout.String()
		}
		if l.Memory != 0 {
			f.Limits.Memory = quantity.FormatSize(l.Memory)
		}
		if l.Pids != 0 {
			f.Limits.Pids = quantity.FormatCount(l.Pids)
		}
	}
	return f, nil
}

// testDirs returns the top-level directories holding the test patch's test
// modules (test*.py, what the runner discovers), "." for modules at the root.
func testDirs(files map[string][]byte) ([]string, error) {
	var dirs []string
	for name := range files {
		if base := path.Base(name); !strings.HasPrefix(base, "test") || !strings.HasSuffix(base, ".py") {
			continue
		}
		top, _, ok := strings.Cut(name, "/")
		if !ok {
			top = "."
		}
		if !slices.Contains(dirs, top) {
			dirs = append(dirs, top)
		}
	}
	if len(dirs) == 0 {
		return nil, errors.New("adds or changes no test*.py module for the unittest runner to discover; give ImportOptions.TestCommand")
	}
	slices.Sort(dirs)
	return dirs, nil
}

// sweTitle is the instance id and the first non-blank line of the statement, on
// one line of at most maxTitle characters.
func sweTitle(id, statement string) string {
	title := id
	for line := range strings.Lines(statement) {
		if line = strings.TrimSpace(line); line != "" {
			title += ": " + line
			break
		}
	}
	title = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, title)
	if utf8.RuneCountInString(title) > maxTitle {
		title = string([]rune(title)[:maxTitle-1]) + "…"
	}
	return title
}

// writeTask writes task.yaml, the hidden files and the reference into dir.
func writeTask(dir string, f *sweFile, hidden map[string][]byte, patch string) error {
	data, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	if len(data) > maxTaskFile {
		return fmt.Errorf("task.yaml would be %d bytes, over the limit of %d (a long hints_text or statement?)", len(data), maxTaskFile)
	}
	if err := writeNew(filepath.Join(dir, FileName), data); err != nil {
		return err
	}
	if err := writeNew(filepath.Join(dir, "solution.patch"), []byte(patch)); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(hidden)) {
		if err := writeNew(filepath.Join(dir, "hidden", filepath.FromSlash(name)), hidden[name]); err != nil {
			return err
		}
	}
	return nil
}

// unittestRunner is the stdlib unittest runner SWE-bench imports get by default
// (ImportOptions.TestCommand). It runs the tests in the process of the code under
// test, so it can only make forgery hard; the built-in tasks are judged out of
// process instead (builtin/agentbox_judge.py).
//
//go:embed agentbox_unittest.py
var unittestRunner []byte
