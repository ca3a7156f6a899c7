package main

// reexecHooks runs the re-executed helpers (the sandbox init) when this binary was
// started as one of them; otherwise it returns at once.
func reexecHooks() {}
