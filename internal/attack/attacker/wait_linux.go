package main

import (
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register("sleep", sleepVector)
	register("watchfile", watchFile)
}

// sleepVector sleeps MS milliseconds (so that the host can observe the sandbox).
func sleepVector(args []string) {
	time.Sleep(time.Duration(atoiArg(args, 0)) * time.Millisecond)
}

// watchFile polls for PATH until its stdin ends or MS milliseconds pass, then looks
// once more: the host mounts something at the workspace while the sandbox runs, and
// closes stdin once it has; it must not appear inside.
//
//	watchfile PATH MS    Attempts: "watch" (ok: PATH appeared)
func watchFile(args []string) {
	path := args[0]
	deadline := time.Now().Add(time.Duration(atoiArg(args, 1)) * time.Millisecond)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	var st unix.Stat_t
	for {
		err := unix.Stat(path, &st)
		if err == nil {
			b, _ := readUpTo(path, 256)
			ok("watch", "%s appeared: %s", path, b)
			return
		}
		select {
		case <-eof:
			err = unix.Stat(path, &st)
			if err == nil {
				continue
			}
			fail("watch", err)
			return
		default:
		}
		if time.Now().After(deadline) {
			fail("watch", err)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
