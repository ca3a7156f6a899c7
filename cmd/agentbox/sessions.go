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
		Short: "Print a durable session's state as JSON: seq, epoch, step, unknown calls, awaiting approvals, grants, end",
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
				"tool_calls": st.ToolCalls, "unknown": st.Unknown, "awaiting": st.Awaiting, "grants": st.Grants,
				"recoveries": st.Epochs, "end": st.End,
				"snapshot_seq": st.FromSnapshot, "workspace_version": st.Workspace.Version})
		},
	}
	cmd.AddCommand(resolve, show, answerCmd(true), answerCmd(false))
	return cmd
}

// answerCmd is sessions approve (allow) or sessions deny.
func answerCmd(allow bool) *cobra.Command {
	var scope string
	verb, past := "deny", "refused"
	if allow {
		verb, past = "approve", "approved"
	}
	cmd := &cobra.Command{
		Use:   verb + " DIR REQUEST",
		Short: "Answer an approval request a durable session awaits (sessions show DIR lists them)",
		Long: `Approve or deny answers an approval request of the durable session in DIR (agent
--session DIR): every item of the request is allowed, or refused. Without --scope an
approval allows the call it was asked for, once; --scope CAPABILITY grants that
capability for the rest of the session (write:src/**, exec:go test **,
network:HOST; it must cover every item), and --scope suggested grants each item's
suggested capability. Items asked every time (a release of tainted data, an
irreversible action) are allowed once whatever the scope.

The answer is left in the session's journal. A driver waiting for it (agent
--approval-wait) records it and goes on; a paused session goes on with agentbox
resume DIR. Either way the answer is recorded as ApprovalResolved in the
hash-chained log before the call is made. A request is answered once.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := journal.Open(args[0], journal.Options{})
			if err != nil {
				return err
			}
			defer s.Close()
			r, a, err := agent.AnswerRequest(s, args[1], allow, scope, "user")
			if err != nil {
				return err
			}
			for i, it := range r.Items {
				what := "refused"
				switch {
				case !allow:
				case it.Once || a.Once:
					what = "allowed for this call"
				case a.Grant != nil && a.Grant[i] != "":
					what = "granted " + a.Grant[i] + " for the session"
				default:
					what = "granted " + it.Capability + " for the session"
				}
				fmt.Fprintf(stdout, "%s: %s\n", it.Need, what)
			}
			fmt.Fprintf(stdout, "%s %s; a waiting session goes on, a paused one with agentbox resume %s\n", args[1], past, args[0])
			return nil
		},
	}
	if allow {
		cmd.Flags().StringVar(&scope, "scope", "", "grant this capability for the session instead of allowing the call once (suggested: each item's suggestion)")
	}
	return cmd
}
