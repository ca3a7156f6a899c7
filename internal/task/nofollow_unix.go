//go:build unix

package task

import "syscall"

// noFollow makes opening a symlink fail instead of opening its target.
const noFollow = syscall.O_NOFOLLOW
