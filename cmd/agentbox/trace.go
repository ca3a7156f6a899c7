package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/chain"
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
	var anchor string
	verify := &cobra.Command{
		Use:   "verify EVENTS [--anchor HASH]",
		Short: "Check the hash chain of an event log",
		Long: `Verify checks that every event of a JSONL event log (agentbox agent --events)
carries the hash of the one before it and a hash of its own content: an edited
decision, a removed, reordered or repeated event is named with its seq. With
--anchor (the hash agent printed as events_anchor, kept apart from the log) a log
whose tail was cut, or that was rewritten whole, is detected too.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var a *chain.Anchor
			if anchor != "" {
				var err error
				if a, err = chain.ParseAnchor(anchor); err != nil {
					return err
				}
			}
			b, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			if err := trace.VerifyEvents(b, a); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			fmt.Fprintf(stdout, "%s: ok (%d events)\n", args[0], len(chain.Split(b)))
			return nil
		},
	}
	verify.Flags().StringVar(&anchor, "anchor", "", "the hash the log must end at (sha256:...)")
	cmd.AddCommand(verify)
	return cmd
}
