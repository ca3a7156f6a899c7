package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/trace"
)

func replayCmd() *cobra.Command {
	var against string
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Re-drive a recorded agent session without side effects, or compare two traces",
		Long: `Replay runs the agent loop again on a recorded trace (or event log): the policy
makes the recorded decisions and every tool returns its recorded result, so nothing
is executed, written or sent. It prints how the replayed session ended and the first
step where it departs from the recording (after a change to budgets, no-progress
rules or stop logic).

With --against OTHER it replays nothing and prints the first step where FILE and
OTHER differ in decision, result or outcome.

Exit status: 0 when they agree, 1 when they diverge, 125 on error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := trace.Load(args[0])
			if err != nil {
				return err
			}
			var b []trace.Step
			if against != "" {
				if b, err = trace.Load(against); err != nil {
					return err
				}
			} else {
				res, replayed, err := agent.Replay(cmd.Context(), a)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "replayed %d steps, %d tool calls: stop %s (recorded %s)\n", res.Steps, res.ToolCalls, res.StopReason, recordedStop(a))
				b = replayed
			}
			d, diverged := trace.Diverge(a, b)
			if !diverged {
				fmt.Fprintf(stdout, "no divergence over %d steps\n", len(a))
				return nil
			}
			fmt.Fprintf(stdout, "first divergence at %s\n", d)
			return exitError{1}
		},
	}
	cmd.Flags().StringVar(&against, "against", "", "compare FILE with this trace instead of replaying it")
	return cmd
}

func recordedStop(s []trace.Step) string {
	if len(s) > 0 && s[len(s)-1].End != nil {
		return s[len(s)-1].End.StopReason
	}
	return "-"
}
