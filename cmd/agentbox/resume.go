package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/trace"
)

func resumeCmd() *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "resume DIR [--diff-out FILE] [--trace FILE] [--events FILE] [--json]",
		Short: "Continue a durable agent session after a crash",
		Long: `Resume continues the session that agent --session DIR started, after its process
died at any point. It takes the session's next epoch (a driver still running is
fenced: its next event is refused), reads the latest snapshot and replays the events
after it, checks the invariants (each call has at most one result, transitions are
legal), and re-derives the workspace in a new environment from --workspace and the
recorded changes, reporting drift. Then each call left without a result is
reconciled by its recovery capability: read-only or idempotent calls and calls
with no effect on the workspace (its content hash equals the one recorded before the
call) are decided afresh; a call whose effect cannot be checked and must not be
repeated (ledger.append, an MCP tool) is unknown, and the session pauses (exit 1,
stop reason paused) until agentbox sessions resolve DIR CALL --as succeeded|failed.
A call held for an approval request (the session paused for a person) is not
reconciled but continued: the answer agentbox sessions approve|deny left is
recorded, then the call is made, under its id; with no answer yet the session
pauses again. Grants approvals gave before are held again, not asked for twice.
A RecoverySummary event precedes any new action. The session's flags are the ones
agent was given; the output flags are resume's own.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := journal.Open(args[0], journal.Options{})
			if err != nil {
				return err
			}
			var argv []string
			err = s.Meta("argv", &argv)
			s.Close()
			if err != nil {
				return fmt.Errorf("%s: %w: start one with agentbox agent --session DIR", args[0], err)
			}
			rec := &agentOptions{}
			fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
			agentFlags(fs, rec)
			if err := fs.Parse(argv); err != nil {
				return fmt.Errorf("%s: the recorded agent flags: %w", args[0], err)
			}
			rec.tracePath, rec.eventsPath, rec.diffOut, rec.json = o.tracePath, o.eventsPath, o.diffOut, o.json
			rec.session, rec.resume = args[0], true
			return agentMain(cmd.Context(), rec, argv)
		},
	}
	outputFlags(cmd.Flags(), o)
	return cmd
}

// sessionArgs are the flags agent was given, but the output flags: what resume
// runs the session with again.
func sessionArgs(f *pflag.FlagSet) []string {
	var out []string
	f.Visit(func(fl *pflag.Flag) {
		switch fl.Name {
		case "trace", "events", "diff-out", "json", "session":
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+fl.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+fl.Name+"="+fl.Value.String())
	})
	return out
}

// openSession opens the journal of --session (agent: a new session, with its
// flags recorded) or of resume's DIR (one that holds a session).
func openSession(o *agentOptions, argv []string) (*journal.Store, error) {
	s, err := journal.Open(o.session, journal.Options{Crash: crashHook(os.Getenv("AGENTBOX_CRASH_AT"))})
	if err != nil {
		return nil, err
	}
	st, err := s.Load()
	if err == nil && !o.resume && st.Seq > 0 {
		err = fmt.Errorf("--session %s holds session %s already: continue it with agentbox resume %s, or give a new directory",
			o.session, st.Session.Session, o.session)
	}
	if err == nil && o.resume && st.Seq == 0 {
		err = fmt.Errorf("%s: %w", o.session, journal.ErrNoSession)
	}
	if err == nil && !o.resume {
		err = s.SetMeta("argv", argv)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// project writes the session's outputs (--events, --trace) as projections of
// its whole journal, every driver's events included.
func project(s *journal.Store, sinks []trace.Sink) error {
	if len(sinks) == 0 {
		return nil
	}
	evs, err := s.Events(0)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range evs {
		for _, k := range sinks {
			errs = append(errs, k.Append(e))
		}
	}
	return errors.Join(errs...)
}

// crashHook is the fault-injection hook of AGENTBOX_CRASH_AT, a comma-separated
// list of crash points (journal "seq:N" and "snapshot:N", the loop's
// "effect-before:N" and "effect-after:N"): the process SIGKILLs itself at
// the first it reaches. Empty: none.
func crashHook(spec string) func(string) {
	if spec == "" {
		return nil
	}
	points := strings.Split(spec, ",")
	return func(p string) {
		if slices.Contains(points, p) {
			flushOutput()
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
