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
	root := &cobra.Command{
		Use:           "agentbox",
		Short:         "The sandbox and harness for AI coding agents",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(runCmd())
	root.AddCommand(doctorCmd())
	root.AddCommand(envCmd())
	root.AddCommand(execCmd())
	root.AddCommand(fsCmd())
	root.AddCommand(patchCmd())
	root.AddCommand(diffCmd())
	root.AddCommand(mcpCmd())
	root.AddCommand(serveCmd())
	root.AddCommand(agentCmd())
	root.AddCommand(traceCmd())
	root.AddCommand(replayCmd())
	root.AddCommand(gradeCmd())
	root.AddCommand(evalCmd())
	if err := root.Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.status)
		}
		fmt.Fprintf(os.Stderr, "agentbox: %v\n", err)
		os.Exit(125)
	}
}
