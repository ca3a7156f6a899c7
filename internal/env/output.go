package env

import (
	"bytes"
	"io"
	"os"
	"sync"
	"syscall"
)

// spillMemory is how much of a command's stream an output keeps in memory
// before it spills to its file.
const spillMemory = 64 << 10

// output is one stream of a command on its way to the artifact store: the
// whole stream, which only a truncated capture needs. Its first spillMemory
// bytes stay in memory; past them it goes to a file in the environment's state
// directory, created then. Most commands write little: creating and removing
// two files for each exec was a third of the daemon's CPU for a `true`
// (ext4's inode allocation, measured with pprof).
type output struct {
	path string
	next io.Writer // also gets every byte (a background command's events); nil: none

	mu   sync.Mutex
	buf  []byte
	f    *os.File // nil until it spills
	size int64
	err  error // the spill failed: the stream is not whole
}

// Write keeps p; it never fails, so the runner's drain of the command's pipe
// goes on whatever happens to the file (keep then reports the failure).
func (o *output) Write(p []byte) (int, error) {
	if o.next != nil {
		o.next.Write(p)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return len(p), nil
	}
	o.size += int64(len(p))
	if o.f == nil && len(o.buf)+len(p) <= spillMemory {
		o.buf = append(o.buf, p...)
		return len(p), nil
	}
	if o.f == nil {
		// Created afresh, never through a link planted there.
		f, err := os.OpenFile(o.path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			o.err = err
			return len(p), nil
		}
		o.f = f
		_, o.err = f.Write(o.buf)
		o.buf = nil
	}
	if o.err == nil {
		_, o.err = o.f.Write(p)
	}
	return len(p), nil
}

// stream returns the whole stream once the command is over, and its size.
func (o *output) stream() (io.Reader, int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.err != nil:
		return nil, 0, o.err
	case o.f != nil:
		return io.NewSectionReader(o.f, 0, o.size), o.size, nil
	}
	return bytes.NewReader(o.buf), o.size, nil
}

// remove drops what o holds.
func (o *output) remove() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f != nil {
		o.f.Close()
		os.Remove(o.path)
		o.f = nil
	}
	o.buf = nil
}
