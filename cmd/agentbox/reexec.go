package main

import "github.com/agentbox/agentbox/internal/sandbox/nsinit"

// reexecHooks runs the sandbox init when this binary was re-executed as one; otherwise
// it returns at once.
func reexecHooks() { nsinit.MaybeRun() }
