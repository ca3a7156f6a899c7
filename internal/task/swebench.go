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
	// Specs say how each repository and version runs (a specs file); Override's
	// set fields win over them (command-line flags for one-off use). What neither
	// sets is detected per row from the repository (Detect): the project's own
	// framework, run as the project runs it.
	Specs    Specs
	Override Spec
	// Limits of the imported tasks; a zero field keeps the spec's, else the task
	// default.
	Limits Limits
}

// Imported is one task directory ImportSWEBench wrote, and how its tests run.
type Imported struct {
	Dir    string
	ID     string
	Choice Choice
}

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
// documentation). It returns the tasks written, in input order, with the
// framework each runs with and why; each passes Load.
//
// Every row is checked, and each base_commit looked up in its clone, before
// anything is written; a bad row is an *ImportError naming its line, instance
// and field. A row that fails later (its reference patch does not apply, say)
// leaves nothing behind: the returned tasks are those written before it.
// Git runs with a timeout from ctx.
func ImportSWEBench(ctx context.Context, r io.Reader, o ImportOptions) ([]Imported, error) {
	cfg, err := o.check()
	if err != nil {
		return nil, fmt.Errorf("import swe-bench: %w", err)
	}
	rows, err := readSWERows(r)
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
	var done []Imported
	for _, row := range rows {
		if err := ctx.Err(); err != nil {
			return done, fmt.Errorf("import swe-bench: %w", err)
		}
		im, err := importRow(ctx, g, cfg, row)
		if err != nil {
			return done, err
		}
		done = append(done, im)
	}
	return done, nil
}

// importConfig is ImportOptions checked, with paths made absolute.
type importConfig struct {
	ImportOptions
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
	if err := o.Override.check(); err != nil {
		return nil, fmt.Errorf("ImportOptions.Override: %w", err)
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
