package image

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// flock opens (creating) the lock file p and takes a flock on it (how is
// unix.LOCK_SH or unix.LOCK_EX, maybe with LOCK_NB). Closing the file releases it.
func flock(p string, how int) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return f, nil
}
