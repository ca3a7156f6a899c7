package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/journal"
)

func sessionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "Inspect durable agent sessions and resolve what recovery could not"}
	var as, note string
	resolve := &cobra.Command{
		Use:   "resolve DIR CALL --as succeeded|failed",
		Short: "Record a person's verdict on a call whose outcome recovery left unknown",
		Long: `Resolve records what a person found out about a call left unknown after a crash
(a paused session names it): --as succeeded if its effect happened (the policy sees
a success and the call is not made again), --as failed if it did not (the policy
sees a failure and may make it again). Then agentbox resume DIR continues. It
takes the session's next epoch: a driver still running is fenced.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := journal.Open(args[0], journal.Options{})
			if err != nil {
				return err
			}
			defer s.Close()
			if err := agent.Resolve(cmd.Context(), s, args[1], as, note); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %s recorded as %s; continue with agentbox resume %s\n", args[0], args[1], as, args[0])
			return nil
		},
	}
	resolve.Flags().StringVar(&as, "as", "", "succeeded or failed (required)")
	resolve.Flags().StringVar(&note, "note", "", "what the person checked")
	show := &cobra.Command{
		Use:   "show DIR",
		Short: "Print a durable session's state as JSON: seq, epoch, step, unknown calls, end",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := journal.Open(args[0], journal.Options{})
			if err != nil {
				return err
			}
			defer s.Close()
			st, err := s.Load()
			if err != nil {
				return err
			}
			if st.Seq == 0 {
				return fmt.Errorf("%s: %w", args[0], journal.ErrNoSession)
			}
			epoch, err := s.Epoch()
			if err != nil {
				return err
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"session": st.Session.Session, "seq": st.Seq, "epoch": epoch, "step": st.Step,
				"tool_calls": st.ToolCalls, "unknown": st.Unknown, "recoveries": st.Epochs, "end": st.End,
				"snapshot_seq": st.FromSnapshot, "workspace_version": st.Workspace.Version})
		},
	}
	cmd.AddCommand(resolve, show)
	return cmd
}
