// Command agentbox-init is the init of agentbox's namespace sandboxes, started by
// agentbox (package sandbox) inside the sandbox's fresh namespaces. It is package
// nsinit and nothing else: a small binary that pays for the Go runtime and nsinit's
// own dependencies, where the agentbox binary re-executed as the init would also map,
// and initialise packages of, the whole CLI. Install it beside agentbox:
//
//	CGO_ENABLED=0 go build -o DIR/ ./cmd/agentbox ./cmd/agentbox-init
//
// agentbox uses it only if it is root's (or the caller's) and nobody else may write
// it or its directory, and the init refuses a Spec from an agentbox built from other
// sources (nsinit.BuildKey). Without it agentbox re-executes itself as the init.
package main

import (
	"fmt"
	"os"

	// nsinit's init function runs the init when argv[0] says so, and exits.
	_ "github.com/agentbox/agentbox/internal/sandbox/nsinit"
)

func main() {
	fmt.Fprintln(os.Stderr, "agentbox-init: the init of agentbox's sandboxes; agentbox starts it, it is not run by hand")
	os.Exit(2)
}
