//go:build !linux

package testenv

// Descriptors and children are counted through /proc, which only Linux has.
func countFDs() int      { return 0 }
func children() []string { return nil }
func fdTargets() string  { return "" }
