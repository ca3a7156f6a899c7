package attack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// terminal is a pseudo-terminal standing in for the user's: agentbox (or a control
// run) gets the tty end as its standard descriptors, and the test reads what reached
// the screen from the master.
type terminal struct {
	master, tty   *os.File
	before, after ttyState
	done          chan struct{}
	out           bytes.Buffer
}

// ttyState is what a command holding the terminal could change for the user: its
// modes (echo), its size and its exclusive flag.
type ttyState struct {
	termios unix.Termios
	size    unix.Winsize
	excl    int
}

func newTerminal(t *testing.T) *terminal {
	t.Helper()
	m, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pty: %v", err)
	}
	t.Cleanup(func() { tty.Close(); m.Close() })
	if err := pty.Setsize(m, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	term := &terminal{master: m, tty: tty, done: make(chan struct{})}
	term.before = term.state(t)
	go func() {
		defer close(term.done)
		io.Copy(&term.out, m) // ends with EIO once every tty descriptor is closed
	}()
	return term
}

func (term *terminal) state(t *testing.T) ttyState {
	t.Helper()
	fd := int(term.tty.Fd())
	tios, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatalf("TCGETS: %v", err)
	}
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		t.Fatalf("TIOCGWINSZ: %v", err)
	}
	excl, err := unix.IoctlGetInt(fd, unix.TIOCGEXCL)
	if err != nil {
		t.Fatalf("TIOCGEXCL: %v", err)
	}
	return ttyState{termios: *tios, size: *ws, excl: excl}
}

// screen closes the test's tty descriptor and returns everything that reached the
// master, once the last writer is gone.
func (term *terminal) screen() string {
	term.tty.Close()
	select {
	case <-term.done:
	case <-time.After(30 * time.Second): // a process of the run still holds the tty
	}
	return term.out.String()
}

// directIO runs the attacker on the host without a sandbox, as uid 1000, with its
// stdin, stdout and stderr on term (nil: pipes), and returns what it wrote.
func (fx *fixture) directIO(term *terminal, args ...string) (stdout, stderr string) {
	t := fx.t
	t.Helper()
	if fx.before == nil {
		fx.snapshot()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(fx.ws, "attacker"), append([]string{"--tag=" + fx.tag}, args...)...)
	cmd.Dir = fx.ws
	cmd.Env = fx.hostEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if term != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = term.tty, term.tty, term.tty
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("control run %v: %v; stderr %q", args, err, e.String())
	}
	if term != nil {
		term.after = term.state(t)
		return term.screen(), ""
	}
	return o.String(), e.String()
}

// TestEscape_TerminalThroughStdio: `agentbox run --stdin -` in a shell handed the
// command the user's own terminal as descriptor 0 (issue 10, item 2). The seccomp
// rule refuses TIOCSTI and TIOCLINUX, but TCSETS (echo off, still off after the run),
// TIOCEXCL and TIOCSWINSZ work on any terminal a process holds, and a session leader
// can make it its controlling terminal. The command must hold no terminal at all, on
// any standard descriptor: every attempt fails and the terminal's modes, size and
// exclusive flag are as they were.
func TestEscape_TerminalThroughStdio(t *testing.T) {
	t.Parallel()
	var names []string
	for _, fd := range []string{"0", "1", "2"} {
		for _, c := range []string{"tcsets", "excl", "winsz", "sti", "sctty", "spgrp", "notty"} {
			names = append(names, fd+":"+c)
		}
	}
	t.Run("control", func(t *testing.T) {
		requireAttacker(t)
		fx := newFixture(t)
		term := newTerminal(t)
		out, _ := fx.directIO(term, "ttystdio")
		at := parseAttempts(strings.ReplaceAll(out, "\r\n", "\n"))
		t.Logf("control on a terminal:\n%s", at.dump())
		at.mustSucceed(t, "control: a process holding a terminal changes it", "0:tcsets", "0:excl", "0:winsz", "1:winsz", "2:tcsets")
		if term.after == term.before {
			t.Errorf("control: the terminal's state did not change, so the check below could not see the attack")
		}
	})
	for _, tc := range []struct {
		name  string
		stdio bool // stdout and stderr are the terminal too, as in an interactive shell
	}{{"stdin", false}, {"stdio", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireSandbox(t)
			fx := newFixture(t)
			term := newTerminal(t)
			o := boxOpts{flags: []string{"--stdin", "-"}, cmd: fx.attack("ttystdio"), stdin: term.tty}
			if tc.stdio {
				o.term = term
			}
			r := fx.run(o)
			if !tc.stdio {
				term.after = term.state(t)
			}
			r.at.mustBeDone(t, "ttystdio")
			r.at.mustFail(t, "the user's terminal reached the sandbox", append(names, "devtty")...)
			if term.after != term.before {
				t.Errorf("HOST CHANGED: the user's terminal: before %+v, after %+v", term.before, term.after)
			}
			fx.verifyHost(r)
		})
	}
}

var keptSGR = regexp.MustCompile("\x1b\\[[0-9;]*m")

// terminalActions lists what in screen a terminal would act on other than SGR, \n, \t
// and \r: ESC, other C0 controls, DEL, C1 controls and bytes that are not UTF-8.
func terminalActions(screen string) []string {
	var found []string
	s := keptSGR.ReplaceAllString(screen, "")
	for i, r := range s {
		bad := r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f || r >= 0x80 && r < 0xa0
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				bad = true
			}
		}
		if bad && len(found) < 10 {
			found = append(found, strings.ToValidUTF8(s[max(i-8, 0):min(i+12, len(s))], "?"))
		}
	}
	return found
}

// TestEscape_TerminalEscapeSequences: the command's output drove the caller's
// terminal (issue 10, item 1): OSC 52 set the clipboard, OSC 0 retitled the window,
// and the terminal's answers to \e[6n and \e[c landed in the shell's input after
// agentbox exited. Where stdout and stderr are a terminal, nothing but text, SGR
// colours, \n, \t and \r may reach it; every other sequence is shown escaped, also
// when split across writes and in its C1 forms (8-bit and UTF-8). To a pipe, and in
// --json, the bytes stay exact; --raw-output passes them on the terminal.
func TestEscape_TerminalEscapeSequences(t *testing.T) {
	t.Parallel()
	requireAttacker(t)
	const clip = "cHduZWQ=" // what OSC 52 would put in the clipboard
	ref := newFixture(t)
	wantOut, wantErr := ref.directIO(nil, "escapes", clip)
	if !strings.Contains(wantOut, "\x1b]52;c;"+clip+"\a") || !strings.Contains(wantErr, "\x1b[6n") {
		t.Fatalf("the attacker did not write the sequences: stdout %q, stderr %q", wantOut, wantErr)
	}
	t.Run("control", func(t *testing.T) {
		fx := newFixture(t)
		screen, _ := fx.directIO(newTerminal(t), "escapes", clip)
		if len(terminalActions(screen)) == 0 || !strings.Contains(screen, "\x1b]52;c;"+clip+"\a") {
			t.Errorf("control: the sequences did not reach the terminal as they are: %q", screen)
		}
	})
	t.Run("terminal", func(t *testing.T) {
		t.Parallel()
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{plain: true, term: newTerminal(t), cmd: fx.attack("escapes", clip)})
		if r.exit != 0 {
			t.Fatalf("agentbox exit %d", r.exit)
		}
		if found := terminalActions(r.raw); len(found) > 0 {
			t.Errorf("ESCAPE: the command's output drove the terminal: %q in\n%q", found, r.raw)
		}
		// Shown, not dropped: the user sees what the command tried, on both streams.
		for _, want := range []string{`\e]52;c;` + clip + `\a`, `\e]0;agentbox-title\a`, `\e[6n`, `\e[c`, `\x9B6n`, `\u009B6n`,
			`\e[2J`, "\x1b[31mred\x1b[0m", "escapes written"} {
			if n := strings.Count(r.raw, want); n < 1 || want != "escapes written" && n != 2 {
				t.Errorf("the screen shows %q %d times, want it once per stream:\n%q", want, n, r.raw)
			}
		}
		fx.verifyHost(r)
	})
	t.Run("raw-output", func(t *testing.T) {
		t.Parallel()
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{plain: true, term: newTerminal(t), flags: []string{"--raw-output"}, cmd: fx.attack("escapes", clip)})
		if !strings.Contains(r.raw, "\x1b]52;c;"+clip+"\a") || !strings.Contains(r.raw, "\x1b[6n") {
			t.Errorf("--raw-output did not pass the sequences as they are: %q", r.raw)
		}
		fx.verifyHost(r)
	})
	t.Run("pipe", func(t *testing.T) {
		t.Parallel()
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{plain: true, cmd: fx.attack("escapes", clip)})
		if r.raw != wantOut || r.rawErr != wantErr {
			t.Errorf("to a pipe the bytes changed:\nstdout %q\nwant   %q\nstderr %q\nwant   %q", r.raw, wantOut, r.rawErr, wantErr)
		}
		fx.verifyHost(r)
	})
	t.Run("json on a terminal", func(t *testing.T) {
		t.Parallel()
		requireSandbox(t)
		fx := newFixture(t)
		r := fx.run(boxOpts{term: newTerminal(t), cmd: fx.attack("escapes", clip)})
		if found := terminalActions(r.raw); len(found) > 0 {
			t.Errorf("ESCAPE: --json drove the terminal: %q", found)
		}
		// The result carries the output as captured: text, with bytes that are not
		// UTF-8 as \xNN; C1 characters, which encoding/json leaves raw, reach the
		// terminal as \u00NN escapes, the same JSON string.
		var capture strings.Builder
		for i := 0; i < len(wantOut); {
			r, n := utf8.DecodeRuneInString(wantOut[i:])
			if r == utf8.RuneError && n == 1 {
				fmt.Fprintf(&capture, `\x%02X`, wantOut[i])
			} else {
				capture.WriteString(wantOut[i : i+n])
			}
			i += n
		}
		if r.res.Stdout != capture.String() {
			t.Errorf("the result's stdout changed:\n%q\nwant\n%q", r.res.Stdout, capture.String())
		}
		fx.verifyHost(r)
	})
}
