//go:build !linux

package nsinit

// MaybeRun returns at once: the namespace sandbox exists only on Linux, so this
// process can never have been started as its init.
func MaybeRun() {}
