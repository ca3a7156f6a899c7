package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func patchCmd() *cobra.Command {
	var d daemonFlags
	cmd := &cobra.Command{
		Use:   "patch ID FILE",
		Short: "Apply a unified diff (FILE, or - for standard input) to a workspace, all or nothing",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			p, err := readInput(a[1])
			if err != nil {
				return err
			}
			c, err := d.client()
			if err != nil {
				return err
			}
			rep, err := c.ApplyPatch(cmd.Context(), a[0], p)
			if err != nil {
				return err
			}
			for _, f := range rep.Files {
				name := f.Path
				if f.OldPath != "" {
					name = f.OldPath + " -> " + f.Path
				}
				fmt.Fprintf(stdout, "%-6s %s (+%d -%d)\n", f.Op, name, f.Added, f.Deleted)
			}
			return nil
		},
	}
	d.add(cmd.Flags())
	return cmd
}
