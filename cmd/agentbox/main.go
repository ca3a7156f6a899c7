// Command agentbox runs AI coding agents' code in a sandbox and judges their work.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbox/agentbox/internal/version"
)

// exitError carries the status agentbox should exit with.
type exitError struct{ status int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.status) }

func main() {
	initOutput(false)
	err := newRoot().Execute()
	flushOutput()
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.status)
		}
		fmt.Fprintf(stderr, "agentbox: %v\n", err)
		flushOutput()
		os.Exit(125)
	}
}

// newRoot builds the command tree.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "agentbox",
		Short: "The sandbox and harness for AI coding agents",
		Long: `The sandbox and harness for AI coding agents.

Where standard output or standard error is a terminal, agentbox shows the control
characters and escape sequences of what it relays (a command's output, files, diffs,
traces, error text) as visible text, \e]52;c;… rather than ESC ] 52 …, so that
sandboxed code cannot set the clipboard, retitle the window or make the terminal
answer into your shell; SGR colours pass. --raw-output passes everything as it is.
Output to a pipe or a file is never changed.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			if rawOutput {
				initOutput(true)
			}
		},
	}
	root.Version = version.Get().String()
	root.SetVersionTemplate("agentbox {{.Version}}\n")
	root.PersistentFlags().BoolVar(&rawOutput, "raw-output", false, "write control characters and escape sequences to a terminal as they are (default: shown escaped, SGR colours kept)")
	root.AddCommand(runCmd())
	root.AddCommand(doctorCmd())
	root.AddCommand(envCmd())
	root.AddCommand(netCmd())
	root.AddCommand(execCmd())
	root.AddCommand(shellCmd())
	root.AddCommand(fsCmd())
	root.AddCommand(patchCmd())
	root.AddCommand(diffCmd())
	root.AddCommand(mcpCmd())
	root.AddCommand(serveCmd())
	root.AddCommand(coordinatorCmd())
	root.AddCommand(agentCmd())
	root.AddCommand(resumeCmd())
	root.AddCommand(sessionsCmd())
	root.AddCommand(traceCmd())
	root.AddCommand(replayCmd())
	root.AddCommand(importCmd())
	root.AddCommand(gradeCmd())
	root.AddCommand(evalCmd())
	root.AddCommand(reportCmd())
	root.AddCommand(policyCmd())
	root.AddCommand(configCmd())
	root.AddCommand(taskCmd())
	root.AddCommand(templateCmd())
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands gives every command that only groups subcommands (env,
// net, fs, ...) a RunE that fails on an argument. Cobra would otherwise print the
// group's help for `agentbox env frobnicate` and exit 0, as if it had done something;
// the root already fails on an unknown command, with suggestions.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Runnable() || !c.HasParent() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return fmt.Errorf("%s\nRun '%s --help' for its commands", msg, cmd.CommandPath())
	}
}
