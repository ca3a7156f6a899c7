//go:build !linux

// Command attacker is the hostile program of the attack suite; it exists only on Linux.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "attacker: only Linux is supported")
	os.Exit(2)
}
