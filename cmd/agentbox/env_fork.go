package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/client"
)

// maxFork is the daemon's bound on one fork, checked here too so that a bad
// count is named before anything is sent.
const maxFork = 100

func envSnapshotCmd() *cobra.Command {
	var (
		d      daemonFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "snapshot ID",
		Short: "Snapshot an environment's workspace (O(1)); it continues above the snapshot, its running commands ended",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := d.client()
			if err != nil {
				return err
			}
			s, err := c.Snapshot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(s)
			}
			fmt.Fprintf(stdout, "%s\t%s\tdepth %d\n", s.ID, s.EnvID, s.Depth)
			return nil
		},
	}
	d.add(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the snapshot as JSON")
	return cmd
}

func envForkCmd() *cobra.Command {
	var (
		d      daemonFlags
		req    client.ForkRequest
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "fork ID --count N",
		Short: "Make N environments (1 to 100) from a snapshot of one, each with its own workspace layer",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Count < 1 || req.Count > maxFork {
				return fmt.Errorf("--count %d: give 1 to %d", req.Count, maxFork)
			}
			c, err := d.client()
			if err != nil {
				return err
			}
			envs, err := c.Fork(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(envs)
			}
			for _, e := range envs {
				fmt.Fprintf(stdout, "%s\t%s\n", e.ID, e.Snapshot)
			}
			return nil
		},
	}
	d.add(cmd.Flags())
	f := cmd.Flags()
	f.IntVar(&req.Count, "count", 1, "how many environments, 1 to 100")
	f.StringVar(&req.Snapshot, "snapshot", "", "fork from this snapshot of the environment's chain (default: a new one, taken now)")
	f.BoolVar(&asJSON, "json", false, "print the environments as JSON")
	return cmd
}
