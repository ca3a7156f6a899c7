package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/task"
)

func taskCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "List and write out the built-in tasks",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in tasks",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ids, err := task.BuiltinIDs()
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, strings.Join(ids, "\n"))
			return nil
		},
	})
	var whole bool
	export := &cobra.Command{
		Use:   "export ID DIR",
		Short: "Write a built-in task's repository (or, with --task, the whole task) into DIR",
		Long: `Export writes the repository of the built-in task ID into DIR (created if missing,
otherwise empty): the files an agent starts from, without the hidden tests, e.g.

  agentbox task export calc ./calc
  agentbox agent --workspace ./calc --goal "make the tests pass" --policy scripted

With --task it writes the task directory instead (task.yaml, repo/, hidden/), which
agentbox grade and eval --tasks load.`,
		Args: cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			return task.ExportBuiltin(args[0], args[1], whole)
		},
	}
	export.Flags().BoolVar(&whole, "task", false, "write the whole task directory (task.yaml, repo/, hidden/), not only its repository")
	cmd.AddCommand(export)
	return cmd
}
