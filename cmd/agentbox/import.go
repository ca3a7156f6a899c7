package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

type importOptions struct {
	suite suiteOptions
	out   string
}

func importCmd() *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import --suite ROWS.jsonl --repos DIR --out TASKS [--specs FILE.yaml] [spec flags]",
		Short: "Write task directories from SWE-bench rows, to grade patches against with grade --task",
		Long: `Import reads SWE-bench rows (instance_id, repo, base_commit, patch, test_patch,
problem_statement, FAIL_TO_PASS, PASS_TO_PASS, version) and writes one task
directory per row under --out: the repository at base_commit (with its history),
the test patch's files as hidden tests, the gold patch as the reference, and a
task.yaml saying how the tests run. Nothing runs while importing.

How a row's tests run comes from, in this order: the spec flags (--framework,
--test-command, --result-format, --setup, --task-env, ...), the --specs file's
entry for the row's repository and version ("*" for any version), and detection:
go test -json for a Go module, node --test for a package.json, pytest (with its
own --junitxml report) where the project's configuration or tests use it, else
python -m unittest -v; a Python src/ layout gets PYTHONPATH=src. The commands
run just the test patch's test files, as SWE-bench's harness does. Import prints
the framework of each task and why.

Test ids in the rows may be pytest node ids, dotted unittest ids, Django-style
"test_x (module.Class)" ids or Go test names; grading maps them onto what the
framework reports, and an id that never ran is "missing".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return importMain(cmd.Context(), o) },
	}
	f := cmd.Flags()
	o.suite.flags(f)
	f.StringVar(&o.out, "out", "", "directory to write the task directories in (created if missing)")
	for _, name := range []string{"go-cache", "go-proxy", "go-mod-cache"} {
		f.MarkHidden(name) // grading's, not importing's
	}
	return cmd
}

func importMain(ctx context.Context, o *importOptions) error {
	if o.out == "" {
		return errors.New("give --out DIR, where the task directories go")
	}
	if o.suite.suite == "builtin" {
		return errors.New("give --suite ROWS.jsonl, a SWE-bench file to import")
	}
	done, err := o.suite.importRows(ctx, o.out)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if len(done) > 0 {
		fmt.Fprintln(tw, "TASK\tFRAMEWORK\tWHY\tDIRECTORY")
	}
	for _, im := range done {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", im.ID, im.Choice.Framework, im.Choice.Reason, im.Dir)
	}
	tw.Flush()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported %d tasks into %s; grade a patch with: agentbox grade --task %s/ID --patch FILE\n", len(done), o.out, o.out)
	return nil
}
