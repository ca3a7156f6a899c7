package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register("balloon", balloon)
	register("fill", fill)
	register("fd-exhaust", fdExhaust)
	register("spin", spin)
	register("bigfile", bigFile)
	register("spawn", spawn)
}

// spawn starts N processes of /bin/sleep as fast as it can (a fork bomb that
// keeps its count), then waits MS milliseconds so the host can count them.
//
//	spawn N MS      Attempts: "spawned" (ok: how many started), "spawn" (fail: the
//	                errno of the first refused fork; ok: all N started)
func spawn(args []string) {
	n, ms := atoiArg(args, 0), atoiArg(args, 1)
	attr := &syscall.ProcAttr{Env: []string{}}
	var err error
	started := 0
	for ; started < n; started++ {
		if _, err = syscall.ForkExec("/bin/sleep", []string{"sleep", "3600"}, attr); err != nil {
			break
		}
	}
	ok("spawned", "%d", started)
	report("spawn", err, "started %d processes", started)
	os.Stdout.Sync()
	time.Sleep(time.Duration(ms) * time.Millisecond)
}

func atoiArg(args []string, i int) int {
	if i >= len(args) {
		usage()
	}
	n, err := strconv.Atoi(args[i])
	if err != nil {
		usage()
	}
	return n
}

// balloon maps and touches memory 1 MiB at a time up to MAXMB.
//
//	balloon MAXMB       Attempts: "balloon" (ok: all of it was granted)
func balloon(args []string) {
	limit := atoiArg(args, 0)
	var keep [][]byte
	for i := range limit {
		b, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			fail("balloon", fmt.Errorf("mmap after %d MiB: %w", i, err))
			return
		}
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	ok("balloon", "%d MiB resident", len(keep))
}

// fill writes 1 MiB files into DIR until a write fails or MAXMB were written.
//
//	fill DIR MAXMB      Attempts: "fill" (fail: the errno that stopped it, with the MiB count
//	                    on a "fill-mb" line; ok: MAXMB fitted)
func fill(args []string) {
	dir := args[0]
	limit := atoiArg(args, 1)
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	written := 0
	var ferr error
	for i := 0; written < limit<<20 && ferr == nil; i++ {
		fd, err := unix.Open(fmt.Sprintf("%s/fill-%d", dir, i), unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			ferr = err
			break
		}
		n, err := unix.Write(fd, chunk)
		written += max(n, 0)
		if err == nil && n < len(chunk) {
			err = unix.ENOSPC
		}
		ferr = err
		unix.Close(fd)
	}
	ok("fill-mb", "%d", written>>20)
	report("fill", ferr, "wrote %d MiB without hitting a limit", written>>20)
}

// fdExhaust opens /dev/null until it fails or MAX descriptors are open.
//
//	fd-exhaust MAX      Attempts: "fd-exhaust" (fail: errno; "fd-count": how many)
func fdExhaust(args []string) {
	limit := atoiArg(args, 0)
	n := 0
	var err error
	for ; n < limit; n++ {
		if _, err = unix.Open("/dev/null", unix.O_RDONLY, 0); err != nil {
			break
		}
	}
	ok("fd-count", "%d", n)
	report("fd-exhaust", err, "opened %d descriptors", n)
}

// spin burns CPU on THREADS threads forever.
//
//	spin THREADS
func spin(args []string) {
	n := atoiArg(args, 0)
	runtime.GOMAXPROCS(n + 1)
	for range n - 1 {
		go burn()
	}
	burn()
}

func burn() {
	x := 0
	for {
		x++
	}
}

// bigFile writes one file of MB MiB.
//
//	bigfile PATH MB     Attempts: "bigfile" (fail: EFBIG expected)
func bigFile(args []string) {
	path := args[0]
	mb := atoiArg(args, 1)
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		fail("bigfile", err)
		return
	}
	defer unix.Close(fd)
	chunk := make([]byte, 1<<20)
	for i := range mb {
		if _, err := unix.Write(fd, chunk); err != nil {
			ok("bigfile-mb", "%d", i)
			fail("bigfile", err)
			return
		}
	}
	ok("bigfile", "wrote %d MiB", mb)
}
