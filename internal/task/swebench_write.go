package task

import (
	"context"
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
	Environment       any            `yaml:"environment,omitempty"`
	Setup             []string       `yaml:"setup,flow,omitempty"`
	TestCommand       []string       `yaml:"test_command,flow"`
	PublicTestCommand []string       `yaml:"public_test_command,flow,omitempty"`
	Env               []string       `yaml:"env,flow,omitempty"`
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
func importRow(ctx context.Context, g *gitRunner, c *importConfig, row *sweRow) (im Imported, err error) {
	final := filepath.Join(c.OutDir, row.InstanceID)
	tmp, err := os.MkdirTemp(c.OutDir, "."+row.InstanceID+".tmp-")
	if err != nil {
		return im, fmt.Errorf("import swe-bench: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	repo := filepath.Join(tmp, "repo")
	if err := g.export(ctx, row.clone, row.BaseCommit, repo); err != nil {
		return im, row.errf("base_commit", "export the tree: %w", err)
	}
	hidden, public, err := applyTestPatch(repo, row.testFiles)
	if err != nil {
		return im, row.errf("test_patch", "%w", err)
	}
	f, choice, err := c.taskFile(row, repo, hidden, public)
	if err != nil {
		return im, err
	}
	if err := writeTask(tmp, f, hidden, row.Patch); err != nil {
		return im, row.errf("", "write the task: %w", err)
	}
	tk, err := Load(tmp)
	if err != nil {
		return im, row.loadError(tmp, err)
	}
	if tk.Statement != row.ProblemStatement {
		return im, row.errf("problem_statement", "did not survive the round trip through task.yaml")
	}
	// os.Rename never replaces a directory, so a task directory that appeared since
	// the check in ImportSWEBench is not overwritten.
	if err := os.Rename(tmp, final); err != nil {
		return im, row.errf("instance_id", "%w; remove it or import into another directory", err)
	}
	return Imported{Dir: final, ID: row.InstanceID, Choice: choice}, nil
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

// taskFile builds the task.yaml of row, whose base tree is in repo: its spec
// (from the specs, the override and detection) turned into commands.
func (c *importConfig) taskFile(row *sweRow, repo string, hidden map[string][]byte, public []string) (*sweFile, Choice, error) {
	sp, _ := c.Specs.lookup(row.Repo, row.Version)
	sp = sp.merge(c.Override)
	rc, err := newRunConfig(sp, repo, row.testFiles, hidden)
	if tp, ok := err.(errTestPatch); ok {
		return nil, Choice{}, row.errf("test_patch", "%w", tp.error)
	}
	if err != nil {
		return nil, Choice{}, row.errf("", "%w", err)
	}
	f := &sweFile{
		ID:                row.InstanceID,
		Title:             sweTitle(row.InstanceID, row.ProblemStatement),
		Statement:         row.ProblemStatement,
		Language:          rc.Language,
		PublicTests:       public,
		Environment:       sp.Environment,
		Setup:             rc.Setup,
		TestCommand:       rc.TestCommand,
		PublicTestCommand: rc.PublicTestCommand,
		ResultFormat:      rc.ResultFormat,
		Env:               rc.Env,
		FailToPass:        row.FailToPass,
		PassToPass:        row.PassToPass,
		Reference:         "solution.patch",
		Metadata:          row.metadata,
	}
	f.Metadata["framework"] = string(rc.choice.Framework)
	fl := fileLimits{Timeout: sp.Timeout, Memory: sp.Memory, Pids: sp.Pids}
	if l := c.Limits; l.Timeout != 0 {
		fl.Timeout = l.Timeout.String()
	}
	if l := c.Limits; l.Memory != 0 {
		fl.Memory = quantity.FormatSize(l.Memory)
	}
	if l := c.Limits; l.Pids != 0 {
		fl.Pids = quantity.FormatCount(l.Pids)
	}
	if fl != (fileLimits{}) {
		f.Limits = &fl
	}
	return f, rc.choice, nil
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
