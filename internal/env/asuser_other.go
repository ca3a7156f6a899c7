//go:build !linux

package env

// asUser runs fn: only Linux has per-thread file system credentials, and no
// environment can run elsewhere anyway (sandbox.Start fails).
func asUser(uid, gid int, fn func() error) error { return fn() }
