package image

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// syncfs flushes the file system holding p: one call instead of an fsync per file.
func syncfs(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs: %w", err)
	}
	return nil
}
