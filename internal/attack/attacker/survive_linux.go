package main

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register("daemonize", daemonize)
	register("daemon-mid", daemonMid)
	register("linger", linger)
}

// daemonize leaves processes behind the way a daemon does: a double fork with setsid,
// so that the survivor has a new session and process group, is reparented away from
// the command, and ignores SIGTERM and SIGHUP. MODE "hold" keeps stdout and stderr open
// (so that a runner waiting for EOF would hang); "close" closes them (so that a runner
// waiting only for EOF would miss it). Every process carries TAG in its argv, so the
// test can find survivors on the host.
//
//	daemonize TAG hold|close
//
// It returns when its stdin ends (the host closes it once it has seen the survivor).
//
// Attempts: "spawn" (ok: the middle process exited and left the survivor).
func daemonize(args []string) {
	if len(args) != 2 {
		usage()
	}
	self, err := os.Executable()
	if err != nil {
		fail("spawn", err)
		return
	}
	cmd := exec.Command(self, "daemon-mid", args[0], args[1])
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Run()
	report("spawn", err, "double-forked survivor left behind")
	// Stay until stdin ends: the host closes it once it has seen the survivor, so
	// that its check does not depend on polling fast enough on a loaded machine.
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// daemonMid starts the survivor in a new session and exits at once.
func daemonMid(args []string) {
	self, _ := os.Executable()
	cmd := exec.Command(self, "linger", args[0], args[1])
	if args[1] == "hold" {
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fail("mid", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// linger ignores the polite signals and sleeps for a minute.
func linger(args []string) {
	signal.Ignore(unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGPIPE, unix.SIGQUIT)
	if len(args) > 1 && args[1] == "close" {
		unix.Close(0)
		unix.Close(1)
		unix.Close(2)
	}
	time.Sleep(60 * time.Second)
	os.Exit(0)
}
