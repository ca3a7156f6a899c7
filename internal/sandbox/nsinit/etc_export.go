package nsinit

import "maps"

// EtcFiles returns the generated /etc files (name → content) that every sandbox
// gets, for other isolation levels that build the same /etc (package gvisor).
func EtcFiles() map[string]string { return maps.Clone(etcFiles) }

// EtcHost returns the host /etc entries a sandbox mirrors read-only.
func EtcHost() []string { return append([]string(nil), etcHost...) }

// SystemDirs returns the host directories holding programs and libraries that
// a sandbox mirrors read-only.
func SystemDirs() []string { return append([]string(nil), systemDirs...) }
