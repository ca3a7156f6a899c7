package main

import (
	"io"
	"os"

	"github.com/agentbox/agentbox/internal/terminal"
)

// stdout and stderr are where every subcommand writes. Bytes a sandbox produced reach
// them from many places (a command's output, a workspace file, a diff, a trace, an
// error's text), so where one is a terminal it is a terminal.Writer, which shows
// control characters and escape sequences instead of letting them drive the user's
// terminal; --raw-output turns that off. Pipes and files get the bytes as they are.
var stdout, stderr io.Writer = os.Stdout, os.Stderr

// rawOutput is the --raw-output flag.
var rawOutput bool

// initOutput chooses stdout and stderr for the process's own streams.
func initOutput(raw bool) {
	stdout, stderr = os.Stdout, os.Stderr
	if raw {
		return
	}
	if terminal.IsTerminal(os.Stdout) {
		stdout = terminal.NewWriter(os.Stdout)
	}
	if terminal.IsTerminal(os.Stderr) {
		stderr = terminal.NewWriter(os.Stderr)
	}
}

// flushOutput ends a stream of sandbox output on a terminal: a sequence left
// incomplete is written escaped, a colour left on is reset. Call it when such a
// stream ends, before agentbox writes its own lines after it, and before exiting.
func flushOutput() {
	for _, w := range []io.Writer{stdout, stderr} {
		if t, ok := w.(*terminal.Writer); ok {
			t.Flush()
		}
	}
}
