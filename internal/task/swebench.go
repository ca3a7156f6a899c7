package task

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// ImportOptions tune ImportSWEBench. OutDir and Repos are required; every other
// zero field selects the default.
type ImportOptions struct {
	// OutDir receives one task directory per row, OutDir/<instance_id>. It is
	// created if missing; an existing task directory is never overwritten.
	OutDir string
	// Repos holds local git clones with full history. The repository "owner/name"
	// is looked up at Repos/owner__name, then Repos/owner/name, then Repos/name.
	Repos string
	// Language of the imported tasks; default Python.
	Language Language
	// TestCommand and ResultFormat become every task's test_command and
	// result_format. When TestCommand is nil (Python only), the tasks run agentbox's
	// stdlib unittest runner, hidden/agentbox_unittest.py, copied from the built-in
	// calc task: [python3, -I, -S, -B, agentbox_unittest.py, DIR...] where the DIRs
	// are the top-level directories of the test_patch's test files, with junit
	// results. A TestCommand naming agentbox_unittest.py also gets the runner.
	TestCommand  []string
	ResultFormat ResultFormat
	// PublicTestCommand, when set, is every task's public_test_command.
	PublicTestCommand []string
	// Limits of the imported tasks; a zero field keeps the task default.
	Limits Limits
}

// runnerName is the hidden unittest runner's file name, at the repository root.
const runnerName = "agentbox_unittest.py"

// ImportError says why one row of a SWE-bench JSONL file was not imported.
type ImportError struct {
	Line       int    // 1-based line of the input
	InstanceID string // the row's instance_id; empty when it has none
	Field      string // the row's field at fault; empty for the row as a whole
	Err        error
}

func (e *ImportError) Error() string {
	s := "swe-bench line " + strconv.Itoa(e.Line)
	if e.InstanceID != "" {
		s += " (" + e.InstanceID + ")"
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Err.Error()
}

func (e *ImportError) Unwrap() error { return e.Err }

// ImportSWEBench reads SWE-bench instances, one JSON object per line of r, and
// writes one task directory per instance under o.OutDir (see the package
// documentation). It returns the directories written, in input order; each
// passes Load.
//
// Every row is checked, and each base_commit looked up in its clone, before
// anything is written; a bad row is an *ImportError naming its line, instance
// and field. A row that fails later (its reference patch does not apply, say)
// leaves nothing behind: the returned directories are those written before it.
// Git runs with a timeout from ctx.
func ImportSWEBench(ctx context.Context, r io.Reader, o ImportOptions) ([]string, error) {
	cfg, err := o.check()
	if err != nil {
		return nil, fmt.Errorf("import swe-bench: %w", err)
	}
	rows, err := readSWERows(r, cfg)
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "agentbox-git-home-")
	if err != nil {
		return nil, fmt.Errorf("import swe-bench: %w", err)
	}
	defer os.RemoveAll(home)
	g, err := newGit(home)
	if err != nil {
		return nil, fmt.Errorf("import swe-bench: %w", err)
	}
	checked := map[string]bool{}
	for _, row := range rows {
		if row.clone, err = findClone(cfg.Repos, row.Repo); err != nil {
			return nil, row.errf("repo", "%w", err)
		}
		if !checked[row.clone] {
			if err := g.checkRepo(ctx, row.clone); err != nil {
				return nil, row.errf("repo", "%w", err)
			}
			checked[row.clone] = true
		}
		if err := g.checkCommit(ctx, row.clone, row.BaseCommit); err != nil {
			return nil, row.errf("base_commit", "%w", err)
		}
		if _, err := os.Lstat(filepath.Join(cfg.OutDir, row.InstanceID)); err == nil {
			return nil, row.errf("instance_id", "%s already exists; remove it or import into another directory", filepath.Join(cfg.OutDir, row.InstanceID))
		}
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("import swe-bench: %w", err)
	}
	var dirs []string
	for _, row := range rows {
		if err := ctx.Err(); err != nil {
			return dirs, fmt.Errorf("import swe-bench: %w", err)
		}
		dir, err := importRow(ctx, g, cfg, row)
		if err != nil {
			return dirs, err
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// importConfig is ImportOptions checked, with defaults filled in.
type importConfig struct {
	ImportOptions
	defaultCommand bool // TestCommand is the runner plus per-row directories
	runner         bool // hidden/ gets agentbox_unittest.py
}

func (o ImportOptions) check() (*importConfig, error) {
	c := &importConfig{ImportOptions: o}
	if o.OutDir == "" {
		return nil, errors.New("ImportOptions.OutDir is empty; name the directory to write task directories into")
	}
	if o.Repos == "" {
		return nil, errors.New("ImportOptions.Repos is empty; name the directory holding local clones (owner__name)")
	}
	var err error
	if c.OutDir, err = filepath.Abs(o.OutDir); err != nil {
		return nil, err
	}
	if c.Repos, err = filepath.Abs(o.Repos); err != nil {
		return nil, err
	}
	switch c.Language {
	case "":
		c.Language = Python
	case Python, Go:
	default:
		return nil, fmt.Errorf("ImportOptions.Language %q: use python or go", o.Language)
	}
	switch {
	case o.TestCommand == nil && c.Language != Python:
		return nil, errors.New("ImportOptions.TestCommand is required for language go; give the command and its ResultFormat")
	case o.TestCommand == nil && o.ResultFormat != "" && o.ResultFormat != JUnit:
		return nil, fmt.Errorf("ImportOptions.ResultFormat %q: the default test command reports junit; give a TestCommand too", o.ResultFormat)
	case o.TestCommand == nil:
		c.ResultFormat, c.defaultCommand, c.runner = JUnit, true, true
	default:
		if err := checkArgv(o.TestCommand); err != nil {
			return nil, fmt.Errorf("ImportOptions.TestCommand: %w", err)
		}
		switch o.ResultFormat {
		case JUnit, TAP, ExitCode:
		case GoTestJSON:
			if c.Language != Go {
				return nil, errors.New("ImportOptions.ResultFormat go-test-json needs language go")
			}
		default:
			return nil, fmt.Errorf("ImportOptions.ResultFormat %q: use junit, go-test-json, tap or exit-code", o.ResultFormat)
		}
		for _, a := range o.TestCommand {
			if a == runnerName {
				c.runner = true
			}
		}
	}
	if o.PublicTestCommand != nil {
		if err := checkArgv(o.PublicTestCommand); err != nil {
			return nil, fmt.Errorf("ImportOptions.PublicTestCommand: %w", err)
		}
	}
	l := o.Limits
	switch {
	case l.Timeout < 0 || l.Timeout > maxTimeout:
		return nil, fmt.Errorf("ImportOptions.Limits.Timeout %v: use 0 for the default or a positive duration up to %v", l.Timeout, maxTimeout)
	case l.Memory < 0 || (l.Memory > 0 && l.Memory < 1<<20):
		return nil, fmt.Errorf("ImportOptions.Limits.Memory %d: use 0 for the default or at least 1 MiB", l.Memory)
	case l.Pids < 0:
		return nil, fmt.Errorf("ImportOptions.Limits.Pids %d: use 0 for the default or at least 1", l.Pids)
	}
	return c, nil
}
