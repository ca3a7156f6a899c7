package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentbox/agentbox/internal/version"
)

// Write writes report.json, report.md and report.html into dir, the results
// directory that the attempts' directories (Attempt.Dir) are relative to. The
// summary written is Summarize(r.Attempts) and the per-task aggregates
// Tasks(r.Attempts), so the three files always agree; r is not modified. Each file is written to a temporary name and renamed, so a reader
// never sees half a report. A missing or unreadable per-attempt file is shown as
// such in the page and is not an error.
func Write(dir string, r *Report) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("report: open results directory: %w", err)
	}
	defer root.Close()
	rep := *r
	rep.Attempts = make([]Attempt, len(r.Attempts))
	for i, a := range r.Attempts {
		a.Outcome = a.outcome()
		a.CostUnknown = a.CostUnknown || unpriced(root, a.Dir)
		rep.Attempts[i] = a
	}
	rep.Summary = Summarize(rep.Attempts)
	rep.Tasks = Tasks(rep.Attempts)
	rep.PassAtK = runPassAtK(rep.Tasks)
	rep.Agentbox = version.Get()
	if err := writeFile(dir, "report.json", func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(&rep)
	}); err != nil {
		return err
	}
	if err := writeFile(dir, "report.md", func(w io.Writer) error {
		return markdown(w, &rep, rep.Summary)
	}); err != nil {
		return err
	}
	return writeFile(dir, "report.html", func(w io.Writer) error {
		return writeHTML(w, root, &rep, rep.Summary)
	})
}

// writeFile writes dir/name through a temporary file and a rename.
func writeFile(dir, name string, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("report: write %s: %w", name, err)
	}
	defer os.Remove(f.Name()) // after a successful rename: nothing left to remove
	bw := bufio.NewWriter(f)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		return fmt.Errorf("report: write %s: %w", name, err)
	}
	return nil
}

// Load reads dir/report.json; dir may also name the report.json itself. Its
// errors say which of the three ways a path is not a run it was: no such
// directory, no report.json in it (not a results directory, or a run that has
// not finished), or a report.json that is not a report.
func Load(dir string) (*Report, error) {
	name := filepath.Join(dir, "report.json")
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("report: load %s: no such directory; give the results directory of an agentbox eval run (its --out)", dir)
	case err != nil:
		return nil, fmt.Errorf("report: load: %w", err)
	case !fi.IsDir():
		name = dir
	}
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("report: load %s: no report.json in it: not the results directory of an agentbox eval run, or a run that has not finished (agentbox eval --resume --out %s finishes it)", dir, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("report: load: %w", err)
	}
	var r struct {
		Report
		Attempts *[]Attempt `json:"attempts"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("report: load %s: not a report: %w", name, err)
	}
	if r.Attempts == nil {
		return nil, fmt.Errorf("report: load %s: not a report of agentbox eval: it has no \"attempts\"", name)
	}
	r.Report.Attempts = *r.Attempts
	return &r.Report, nil
}

// WriteComparison writes c as compare.json and compare.md into dir.
func WriteComparison(dir string, c *Comparison) error {
	if err := writeFile(dir, "compare.json", func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(c)
	}); err != nil {
		return err
	}
	return writeFile(dir, "compare.md", c.Markdown)
}
