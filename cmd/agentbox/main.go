// Command agentbox runs AI coding agents' code in a sandbox and judges their work.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries the status agentbox should exit with.
type exitError struct{ status int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.status) }

func main() {
	reexecHooks()
	initOutput(false)
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
	root.AddCommand(agentCmd())
	root.AddCommand(traceCmd())
	root.AddCommand(replayCmd())
	root.AddCommand(importCmd())
	root.AddCommand(gradeCmd())
	root.AddCommand(evalCmd())
	root.AddCommand(reportCmd())
	root.AddCommand(policyCmd())
	err := root.Execute()
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
