package runner

import (
	"testing"

	"github.com/creack/pty"
)

// A terminal given as Stdin never reaches the command (issue 10, item 2): through it
// the command could turn echo off for the user's shell, resize the terminal or make
// it its controlling terminal. The command reads a pipe that the terminal's input is
// copied into, and the terminal's end of input (Ctrl-D) ends it.
func TestStdinTerminalIsCopiedThroughAPipe(t *testing.T) {
	m, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer tty.Close()
	if _, err := m.Write([]byte("typed\n\x04")); err != nil { // a line, then Ctrl-D
		t.Fatal(err)
	}
	res := runProc(t, Spec{Stdin: tty, Argv: sh(`if [ -t 0 ]; then echo tty; else echo pipe; fi; stty -echo 2>/dev/null && echo stty; cat`)})
	if res.Stdout != "pipe\ntyped\n" || res.ExitCode != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the input through a pipe", res.ExitCode, res.Stdout, res.Stderr)
	}
}
