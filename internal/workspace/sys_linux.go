package workspace

import (
	"io/fs"
	"syscall"
)

func platformCheck() error { return nil }

// linkCount is the number of hard links of the file fi describes.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Nlink
	}
	return 1
}

// nonblock is added to every open of an entry that may turn out to be a fifo, so
// that the open returns at once and the fstat that follows can refuse it.
const nonblock = syscall.O_NONBLOCK
