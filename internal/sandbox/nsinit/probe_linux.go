package nsinit

import (
	"os"

	"golang.org/x/sys/unix"
)

// probeOverlay runs in a fresh user and mount namespace and tries the overlay mount
// the init would make (with userxattr, on a tmpfs). Exit status 0 means it works.
func probeOverlay() int {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return 1
	}
	if err := unix.Mount("tmpfs", base, "tmpfs", 0, "size=64k"); err != nil {
		return 2
	}
	for _, d := range []string{"l", "u", "w", "m"} {
		if err := os.Mkdir(base+"/"+d, 0o755); err != nil {
			return 3
		}
	}
	opts := "lowerdir=" + base + "/l,upperdir=" + base + "/u,workdir=" + base + "/w,userxattr"
	if err := unix.Mount("overlay", base+"/m", "overlay", 0, opts); err != nil {
		return 4
	}
	if err := os.WriteFile(base+"/m/x", nil, 0o644); err != nil {
		return 5
	}
	return 0
}
