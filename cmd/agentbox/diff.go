package main

import (
	"github.com/spf13/cobra"
)

func diffCmd() *cobra.Command {
	var d daemonFlags
	cmd := &cobra.Command{
		Use:   "diff ID",
		Short: "Print every change made in an environment since its creation, as a unified diff",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := d.client()
			if err != nil {
				return err
			}
			b, err := c.Diff(cmd.Context(), a[0])
			if err != nil {
				return err
			}
			_, err = stdout.Write(b)
			return err
		},
	}
	d.add(cmd.Flags())
	return cmd
}
