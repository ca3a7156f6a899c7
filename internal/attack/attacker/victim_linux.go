package main

import (
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

func init() { register("victim", victim) }

// victim is not an attack: the test runs it on the host, outside any sandbox, as the
// process the sandbox must not reach. It prints "ready", then one "SIG <name>" line for
// every signal it receives (SIGKILL cannot be recorded; the test checks that it is
// still alive), and never exits by itself.
//
//	victim TOKEN       (TOKEN only marks the argv, for the /proc scan of the sandbox)
func victim(args []string) {
	c := make(chan os.Signal, 64)
	signal.Notify(c)
	fmt.Println("ready")
	for s := range c {
		if s == unix.SIGURG { // the Go runtime's own preemption signal
			continue
		}
		fmt.Printf("SIG %v\n", s)
	}
}
