package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/agent"
	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/sessionapi"
)

func sessionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sessions", Short: "Inspect durable agent sessions and resolve what recovery could not",
		Long: `Sessions inspects and answers durable sessions: those of agent --session DIR
(each command takes the DIR), or with --coordinator URL those an agentbox
coordinator serve hosts (each takes the session's ID; the token is
$AGENTBOX_COORDINATOR_TOKEN or the file --coordinator-token-file names).`}
	co := &coordFlags{}
	co.add(cmd)
	var as, note string
	resolve := &cobra.Command{
		Use:   "resolve DIR|ID CALL --as succeeded|failed",
		Short: "Record a person's verdict on a call whose outcome recovery left unknown",
		Long: `Resolve records what a person found out about a call left unknown after a crash
(a paused session names it): --as succeeded if its effect happened (the policy sees
a success and the call is not made again), --as failed if it did not (the policy
sees a failure and may make it again). Then agentbox resume DIR continues. It
takes the session's next epoch: a driver still running is fenced. With
--coordinator URL, ID names a paused session the coordinator hosts, which goes
on at once.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c, err := co.client(); c != nil || err != nil {
				if err != nil {
					return err
				}
				if _, err := c.Resolve(cmd.Context(), args[0], args[1], as, note); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s: %s recorded as %s; the session goes on\n", args[0], args[1], as)
				return nil
			}
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
		Short: "Print a durable session's state as JSON: seq, epoch, step, unknown calls, awaiting approvals, grants, goal revision, steers taken and waiting, plan (stale items marked), subagents, end",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c, err := co.client(); c != nil || err != nil {
				if err != nil {
					return err
				}
				i, err := c.Get(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return printJSON(i)
			}
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
			waiting, err := s.Steers(st.Steered())
			if err != nil {
				return err
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"session": st.Session.Session, "seq": st.Seq, "epoch": epoch, "step": st.Step,
				"tool_calls": st.ToolCalls, "unknown": st.Unknown, "awaiting": st.Awaiting, "grants": st.Grants,
				"recoveries": st.Epochs, "end": st.End, "goal": st.Goal, "goal_text": st.CurrentGoal(), "steers": st.Steers, "steers_waiting": waiting,
				"plan": st.Plan, "subagents": st.Subagents,
				"snapshot_seq": st.FromSnapshot, "workspace_version": st.Workspace.Version})
		},
	}
	cmd.AddCommand(resolve, show, steerCmd(co), answerCmd(co, true), answerCmd(co, false), lsCmd(co), cancelCmd(co))
	for _, c := range cmd.Commands() {
		runE := c.RunE
		if runE == nil {
			continue
		}
		c.RunE = func(cmd *cobra.Command, args []string) error { return co.hint(runE(cmd, args), args) }
	}
	return cmd
}

func steerCmd(co *coordFlags) *cobra.Command {
	var kind, message string
	cmd := &cobra.Command{
		Use:   "steer DIR|ID --kind supplement|correct|replace|ask --message TEXT",
		Short: "Send a message to a running (or paused) durable session: change its goal, or ask how it is doing",
		Long: `Steer leaves a message in the steering inbox of the durable session in DIR; its
driver (another process) takes it at the next safe point, or agentbox resume DIR
does. --kind supplement adds to the goal (grants stay); correct says the direction
is wrong and replace gives a new goal: both start a new goal revision, drop the
grants given under the old one, and the results of calls made under it that
arrive later are recorded but not fed to the agent. ask asks for progress; the
goal does not change. What the session did with its model reply or the call in
flight (cancelled, let finish and kept or rolled back, awaited) is recorded as
GoalRevised; agentbox sessions show DIR lists the steers taken and the answers.
With --coordinator URL, ID names a session the coordinator hosts (a paused one
is started to take it).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c, err := co.client(); c != nil || err != nil {
				if err != nil {
					return err
				}
				r, err := c.Steer(cmd.Context(), args[0], kind, message)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s: steer %d (%s) left for the session\n", args[0], r.ID, r.Kind)
				return nil
			}
			s, err := journal.Open(args[0], journal.Options{})
			if err != nil {
				return err
			}
			defer s.Close()
			r, err := agent.Steer(s, kind, message, "user")
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			fmt.Fprintf(stdout, "%s: steer %d (%s) left for the session; agentbox sessions show %s says when it is taken\n", args[0], r.ID, r.Kind, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "supplement, correct, replace or ask (required)")
	cmd.Flags().StringVar(&message, "message", "", "what to add, correct, do instead, or ask (required)")
	cmd.MarkFlagRequired("kind")
	cmd.MarkFlagRequired("message")
	return cmd
}

// answerCmd is sessions approve (allow) or sessions deny.
func answerCmd(co *coordFlags, allow bool) *cobra.Command {
	var scope string
	verb, past := "deny", "refused"
	if allow {
		verb, past = "approve", "approved"
	}
	cmd := &cobra.Command{
		Use:   verb + " DIR|ID REQUEST",
		Short: "Answer an approval request a durable session awaits (sessions show DIR lists them)",
		Long: `Approve or deny answers an approval request of the durable session in DIR (agent
--session DIR): every item of the request is allowed, or refused. Without --scope an
approval allows the call it was asked for, once; --scope CAPABILITY grants that
capability for the rest of the session (write:src/**, exec:go test **,
network:HOST; it must cover every item), and --scope suggested grants each item's
suggested capability. Items asked every time (a release of tainted data, an
irreversible action) are allowed once whatever the scope.

With --coordinator URL, ID names a session the coordinator hosts, and the
coordinator leaves the answer the same way (a paused session's driver starts
again at once).

The answer is left in the session's journal. A driver waiting for it (agent
--approval-wait) records it and goes on; a paused session goes on with agentbox
resume DIR. Either way the answer is recorded as ApprovalResolved in the
hash-chained log before the call is made. A request is answered once.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, a, err := answer(cmd.Context(), co, args[0], args[1], allow, scope)
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
			if co.url != "" {
				fmt.Fprintf(stdout, "%s %s; session %s goes on\n", args[1], past, args[0])
				return nil
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

// answer answers a request of the session in dir, or of the coordinator's
// session id: agent.AnswerRequest either way.
func answer(ctx context.Context, co *coordFlags, session, request string, allow bool, scope string) (grant.Request, grant.Answer, error) {
	c, err := co.client()
	if err != nil {
		return grant.Request{}, grant.Answer{}, err
	}
	if c != nil {
		a, err := c.Answer(ctx, session, request, allow, scope)
		return a.Request, a.Answer, err
	}
	s, err := journal.Open(session, journal.Options{})
	if err != nil {
		return grant.Request{}, grant.Answer{}, err
	}
	defer s.Close()
	return agent.AnswerRequest(s, request, allow, scope, "user")
}

func lsCmd(co *coordFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "ls --coordinator URL",
		Short: "List the sessions a coordinator hosts: id, state, stop reason, step, awaiting approvals",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := co.need()
			if err != nil {
				return err
			}
			is, err := c.List(cmd.Context())
			if err != nil {
				return err
			}
			for _, i := range is {
				fmt.Fprintf(stdout, "%s\t%s\t%s\tstep %d\tawaiting %d\t%s\n", i.ID, i.State, i.StopReason, i.Step, len(i.Awaiting), clip(i.Goal, 60))
			}
			return nil
		},
	}
}

func cancelCmd(co *coordFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID --coordinator URL",
		Short: "Cancel a session a coordinator hosts: it ends with stop reason cancelled",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := co.need()
			if err != nil {
				return err
			}
			i, err := c.Cancel(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %s %s\n", i.ID, i.State, i.StopReason)
			return nil
		},
	}
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// coordFlags say how the sessions commands reach a coordinator.
type coordFlags struct{ url, tokenFile string }

func (c *coordFlags) add(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&c.url, "coordinator", "", "a coordinator's URL (agentbox coordinator serve): the sessions it hosts, by ID")
	f.StringVar(&c.tokenFile, "coordinator-token-file", "", "file holding the coordinator's token (default: $AGENTBOX_COORDINATOR_TOKEN)")
}

// client is the coordinator's client, or nil without --coordinator.
func (c *coordFlags) client() (*sessionapi.Client, error) {
	if c.url == "" {
		return nil, nil
	}
	tok := os.Getenv("AGENTBOX_COORDINATOR_TOKEN")
	if c.tokenFile != "" {
		var err error
		if tok, err = readToken("coordinator-token-file", c.tokenFile, "a token of the coordinator: its --token-file, or one its --config lists"); err != nil {
			return nil, err
		}
	}
	if tok == "" {
		return nil, errors.New("--coordinator needs its token: set AGENTBOX_COORDINATOR_TOKEN or give --coordinator-token-file")
	}
	return sessionapi.NewClient(c.url, tok)
}

// hint gives the coordinator's suggested actions as the sessions commands that
// do them, in place of the API's routes.
func (c *coordFlags) hint(err error, args []string) error {
	var ce *client.Error
	if c.url == "" || !errors.As(err, &ce) {
		return err
	}
	id := "ID"
	if len(args) > 0 {
		id = args[0]
	}
	switch ce.SuggestedAction {
	case sessionapi.HintList:
		ce.SuggestedAction = "list them: agentbox sessions ls --coordinator " + c.url
	case sessionapi.HintState:
		ce.SuggestedAction = fmt.Sprintf("read its state: agentbox sessions show %s --coordinator %s", id, c.url)
	}
	return err
}

func (c *coordFlags) need() (*sessionapi.Client, error) {
	if c.url == "" {
		return nil, errors.New("this command needs --coordinator URL: a session directory has no such list")
	}
	return c.client()
}
