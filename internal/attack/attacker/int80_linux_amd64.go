package main

// int80 makes an i386 system call with the int $0x80 instruction and returns EAX
// (a negative errno on failure).
func int80(nr, a1, a2, a3 uint32) uint32

const haveCompat = true
