//go:build !linux

package gvinit

// MaybeRun returns at once: there is no gVisor off Linux.
func MaybeRun() {}
