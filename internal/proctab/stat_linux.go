package proctab

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// readStat reads /proc/<pid>/stat with three system calls (os.ReadFile makes six:
// it also registers the descriptor with the poller, stats the file and reads to
// EOF). A line fits in the buffer; one that does not is read again whole.
func readStat(pid int) ([]byte, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 1024)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n < len(buf) {
			return buf[:n], nil
		}
		return os.ReadFile(path)
	}
}
