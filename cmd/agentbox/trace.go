package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/trace"
)

func traceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Read agent traces",
	}
	var asJSON bool
	stats := &cobra.Command{
		Use:   "stats FILE",
		Short: "Metrics of one agent session from its trace or event log",
		Long: `Stats reads a JSONL step trace (agentbox agent --trace) or event log (--events)
and prints: steps, tool calls per tool, failures by error code, the tool error rate,
model requests, tokens and cost, p50/p95 step latency, and the budget left before
each step.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			steps, err := trace.Load(args[0])
			if err != nil {
				return err
			}
			s := trace.ComputeStats(steps)
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return s.WriteText(stdout)
		},
	}
	stats.Flags().BoolVar(&asJSON, "json", false, "print the stats as JSON")
	cmd.AddCommand(stats)
	return cmd
}
