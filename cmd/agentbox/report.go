package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/eval/report"
)

func reportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Work with the reports of eval runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return fmt.Errorf("report: give a subcommand (compare); see agentbox report --help")
		},
	}
	cmd.AddCommand(reportCompareCmd())
	return cmd
}

type compareOptions struct {
	a, b, out        string
	json, failOnRegr bool
}

func reportCompareCmd() *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Show what changed per task from one eval run to another",
		Long: `Compare reads the report.json of two eval runs (their results directories, the
--out of agentbox eval) and shows, per task, what changed from RUN_A (the
baseline) to RUN_B: regressions (B resolves the task less often than A),
improvements, tasks only one run has, and the change of the mean cost and agent
time per attempt (cost "unknown" where a run had no prices for its model).

It prints the runs' totals and the changed tasks, and writes compare.json and
compare.md (every task) into --out, by default RUN_B's directory.

Exit status: 0, or 1 with --fail-on-regression when a task regressed; 125 when
a run cannot be read.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.a, o.b = args[0], args[1]
			return reportCompare(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "directory to write compare.json and compare.md into (default: RUN_B's directory)")
	f.BoolVar(&o.json, "json", false, "print the comparison as JSON (compare.json's content) instead of text")
	f.BoolVar(&o.failOnRegr, "fail-on-regression", false, "exit 1 when a task regressed")
	return cmd
}

func reportCompare(o *compareOptions) error {
	load := func(which, path string) (*report.Report, string, error) {
		r, err := report.Load(path)
		if err != nil {
			return nil, "", fmt.Errorf("report compare: %s: %w", which, err)
		}
		dir := path
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
			dir = filepath.Dir(path)
		}
		return r, dir, nil
	}
	a, dirA, err := load("RUN_A", o.a)
	if err != nil {
		return err
	}
	b, dirB, err := load("RUN_B", o.b)
	if err != nil {
		return err
	}
	c := report.Compare(a, dirA, b, dirB)
	out := o.out
	if out == "" {
		out = dirB
	}
	if err := report.WriteComparison(out, c); err != nil {
		return fmt.Errorf("report compare: %w", err)
	}
	if o.json {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		if err := e.Encode(c); err != nil {
			return err
		}
	} else {
		if err := c.Text(stdout); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\ncomparison: %s, %s\n", filepath.Join(out, "compare.json"), filepath.Join(out, "compare.md"))
	}
	if o.failOnRegr && len(c.Regressions) > 0 {
		return exitError{1}
	}
	return nil
}
