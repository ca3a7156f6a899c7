package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func init() {
	register("ttystdio", ttyStdio)
	register("escapes", escapes)
}

// ttyStdio works on whatever terminal its standard descriptors are: in a shell,
// `agentbox run --stdin -` would hand it the user's own. It turns echo off (and
// leaves it off), takes the terminal exclusively, resizes it, pushes input
// (TIOCSTI), makes it its controlling terminal, takes its foreground process group
// and gives it up again.
//
// Attempts: "FD:CMD" where FD is 0|1|2 and CMD is tcsets|excl|winsz|sti|sctty|spgrp|
// notty, and "devtty" (opening /dev/tty, the controlling terminal if it has one).
func ttyStdio(args []string) {
	for fd := range 3 {
		n := strconv.Itoa(fd) + ":"
		t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err == nil {
			t.Lflag &^= unix.ECHO
			err = unix.IoctlSetTermios(fd, unix.TCSETS, t)
		}
		report(n+"tcsets", err, "echo turned off")
		report(n+"excl", unix.IoctlSetInt(fd, unix.TIOCEXCL, 0), "terminal made exclusive")
		report(n+"winsz", unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 7, Col: 13}), "resized to 13x7")
		report(n+"sti", ioctlByte(fd, cmdTIOCSTI, '#'), "input pushed")
		report(n+"sctty", unix.IoctlSetInt(fd, unix.TIOCSCTTY, 0), "made the controlling terminal")
		report(n+"spgrp", unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp()), "foreground group taken")
		report(n+"notty", unix.IoctlSetInt(fd, unix.TIOCNOTTY, 0), "controlling terminal given up")
	}
	fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	report("devtty", err, "opened the controlling terminal")
}

// escapes writes what a terminal acts on, to stdout and stderr: OSC 52 (set the
// clipboard to ARG), OSC 0 (window title), the status and attribute queries the
// terminal answers into its input (\e[6n, \e[c), a DCS, cursor movement, the 8-bit
// and UTF-8 forms of C1 CSI and OSC, and a colour (SGR). Each sequence is split
// across two write calls after its ESC, so that a filter looking at one write at a
// time would miss it.
//
// It reports nothing: the test reads what reached the terminal.
func escapes(args []string) {
	clip := "Y2xpcGJvYXJk" // "clipboard"
	if len(args) > 0 {
		clip = args[0]
	}
	seqs := []string{
		"\x1b]52;c;" + clip + "\a",
		"\x1b]0;agentbox-title\a",
		"\x1b[6n", "\x1b[c",
		"\x1bP$q\"p\x1b\\",
		"\x1b[2J\x1b[H",
		"\x9b6n", "\x9d0;c1-title\x07",
		"\u009b6n", "\u009d0;c1-title\u009c",
		"\x1b[31mred\x1b[0m",
		"\b\b\rline\n",
	}
	for _, fd := range []int{1, 2} {
		for _, s := range seqs {
			unix.Write(fd, []byte(s[:1]))
			unix.Write(fd, []byte(s[1:]))
		}
	}
	fmt.Fprintln(os.Stdout, "\nescapes written")
}
