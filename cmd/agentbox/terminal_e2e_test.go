package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
)

// onTerminal runs agentbox with stdin, stdout and stderr on a fresh pty, as in a
// user's shell, and returns what reached the screen and the exit status.
func onTerminal(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	m, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pty: %v", err)
	}
	defer m.Close()
	var screen bytes.Buffer
	done := make(chan struct{})
	go func() { defer close(done); io.Copy(&screen, m) }() // EIO once the tty is closed everywhere
	cmd := exec.Command(agentbox, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	err = cmd.Run()
	tty.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the pty was not closed 30 s after agentbox %v exited", args)
	}
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return screen.String(), status
}

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// actions returns what a terminal would act on in screen: anything but text, SGR,
// \n, \t and \r.
func actions(screen string) []rune {
	var found []rune
	s := sgr.ReplaceAllString(screen, "")
	for i, r := range s {
		_, n := utf8.DecodeRuneInString(s[i:])
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f || r >= 0x80 && r < 0xa0 || r == utf8.RuneError && n == 1 {
			found = append(found, r)
		}
	}
	return found
}

// TestCLIOnTerminal: everything the CLI relays from an environment reaches a terminal
// with its escape sequences shown, not executed (issue 10, item 1): exec's streamed
// output, fs cat of a file the sandbox wrote, fs ls of a name it chose, the diff, and
// agentbox's own error line quoting the sandbox's text. To a pipe the bytes are exact.
func TestCLIOnTerminal(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	tr := d.track()
	env := []string{"AGENTBOX_SERVER=" + d.socket, "AGENTBOX_TOKEN=" + e2eToken}
	out, errOut, st := d.cli("env", "create", "--workspace", filepath.Join(d.work, "proj"))
	if st != 0 {
		t.Fatalf("create: %d %s", st, errOut)
	}
	id := strings.TrimSpace(out)
	defer d.cli("env", "rm", id)
	// A printf format: \233 is the 8-bit CSI, which JSON (the API's argv) cannot carry.
	const evil = "\x1b]52;c;cHduZWQ=\a\x1b]0;title\a\x1b[6n\u009b6n\\2336n\x1b[31mred"
	printed := strings.ReplaceAll(evil, `\233`, "\x9b")
	if _, e, st := d.cli("exec", id, "--", "sh", "-c", `printf "$1" > "$2"; printf "$1"; printf "$1" >&2`, "sh", evil, "evil\x1b]0;name\a"); st != 0 {
		t.Fatalf("exec: %d %s", st, e)
	}
	for _, args := range [][]string{
		{"exec", id, "--", "sh", "-c", `printf "$1"; printf "$1" >&2`, "sh", evil},
		{"fs", "cat", id, "evil\x1b]0;name\a"},
		{"fs", "ls", id},
		{"diff", id},
	} {
		t.Run(args[0]+" "+args[1], func(t *testing.T) {
			screen, status := onTerminal(t, env, args...)
			if status != 0 {
				t.Fatalf("status %d: %q", status, screen)
			}
			if found := actions(screen); len(found) > 0 {
				t.Errorf("ESCAPE: %v drove the terminal with %q:\n%q", args, found, screen)
			}
			if !strings.Contains(screen, `\e]`) {
				t.Errorf("the sequences are not shown escaped:\n%q", screen)
			}
		})
	}
	t.Run("pipe", func(t *testing.T) {
		o, e, st := d.cli("exec", id, "--", "sh", "-c", `printf "$1"; printf "$1" >&2`, "sh", evil)
		if st != 0 || o != printed || e != printed {
			t.Errorf("to a pipe the bytes changed: status %d stdout %q stderr %q", st, o, e)
		}
		if o, _, _ := d.cli("fs", "cat", id, "evil\x1b]0;name\a"); o != printed {
			t.Errorf("fs cat to a pipe: %q", o)
		}
	})
	t.Run("error text", func(t *testing.T) {
		screen, status := onTerminal(t, env, "fs", "cat", id, "missing\x1b]0;name\a")
		if status != 125 || len(actions(screen)) > 0 || !strings.Contains(screen, `missing\e]0;name\a`) {
			t.Errorf("status %d, screen %q", status, screen)
		}
	})
	d.cli("env", "rm", id)
	noLeaks(t, tr)
}
