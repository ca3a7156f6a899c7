//go:build linux && !amd64

package main

// int80 exists only on amd64; on other architectures the compat vectors report ENOSYS.
func int80(nr, a1, a2, a3 uint32) uint32 { return uint32(0xffffffda) } // -ENOSYS

const haveCompat = false
