package image

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// ctxReader fails reads once ctx is done, so a long copy stops when asked.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// countReader counts what it reads.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// sparseChunk is the unit copySparse checks for zeros: a multiple of every file
// system's block size, so holes stay aligned.
const sparseChunk = 64 << 10

var zeros [sparseChunk]byte

// seekWriter is what copySparse writes to (an *os.File).
type seekWriter interface {
	io.WriteSeeker
	Truncate(size int64) error
}

// copySparse copies exactly size bytes from r to w, seeking over every all-zero
// chunk instead of writing it, so a sparse file (tar delivers its holes as zeros)
// stays sparse on disk. buf must be sparseChunk bytes.
func copySparse(w seekWriter, r io.Reader, size int64, buf []byte) error {
	for off := int64(0); off < size; {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-off)])
		if n > 0 {
			var werr error
			if bytes.Equal(buf[:n], zeros[:n]) {
				_, werr = w.Seek(int64(n), io.SeekCurrent)
			} else {
				_, werr = w.Write(buf[:n])
			}
			if werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("archive ends %d bytes into a %d-byte file", off, size)
		}
		if err != nil {
			return err
		}
	}
	return w.Truncate(size)
}
