package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// Caps on what the HTML page embeds, so one huge log cannot make a giant page.
const (
	// FileCap is the most of one file (diff, test log) the page embeds.
	FileCap = 256 << 10
	// TotalCap is the most of all embedded files together; past it each file
	// gets MinFileCap.
	TotalCap   = 32 << 20
	MinFileCap = 8 << 10
	// StepCap is the most trace steps shown per attempt (the stop reason is
	// always shown).
	StepCap = 500
	// LineCap is the longest trace line read; a longer one is skipped.
	LineCap = 8 << 20
	// MessageCap is the most of one transcript message (what the model said, a
	// call's arguments, a tool's result) the page embeds while the attempt's
	// TranscriptCap lasts; past it each gets MinMessageCap.
	MessageCap    = 4 << 10
	TranscriptCap = 64 << 10
	MinMessageCap = 256
)

// text is an embedded file: its (possibly cut) content, or why there is none.
type text struct {
	Missing   string // "not recorded", or why it could not be read
	Body      string
	Size      int64 // of the whole file
	Truncated bool
	Head      bool  // the cut kept the head only (else head and tail)
	Shown     int64 // bytes shown of the head (and as many of the tail)
}

// Note is the visible truncation notice.
func (t text) Note() string {
	if !t.Truncated {
		return ""
	}
	if t.Head {
		return fmt.Sprintf("truncated: the file has %s, the first %s are shown", size(t.Size), size(t.Shown))
	}
	return fmt.Sprintf("truncated: the file has %s, its first and last %s are shown", size(t.Size), size(t.Shown))
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// attemptFile is name inside an attempt's directory, or "" when the directory is
// not a local path (a report.json edited to point elsewhere).
func attemptFile(dir, name string) string {
	if dir == "" || !fs.ValidPath(path.Clean(dir)) {
		return ""
	}
	return path.Join(path.Clean(dir), name)
}

// open opens a regular file under root. The os.Root keeps a symlink or a ".."
// from reaching outside the results directory; the type check keeps a FIFO from
// blocking the report.
func open(root *os.Root, name string) (*os.File, int64, string) {
	if root == nil || name == "" {
		return nil, 0, "not recorded"
	}
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, "not recorded"
	}
	if err != nil {
		return nil, 0, "unreadable: " + cause(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, "unreadable: not a regular file"
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, 0, "unreadable: " + cause(err)
	}
	return f, fi.Size(), ""
}

// cause is err without the path a PathError carries.
func cause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// readCapped reads name under root, keeping at most limit bytes: the head only,
// or the first and the last limit/2 bytes.
func readCapped(root *os.Root, name string, limit int64, headOnly bool) text {
	f, n, missing := open(root, name)
	if f == nil {
		return text{Missing: missing}
	}
	defer f.Close()
	if n <= limit {
		b, err := io.ReadAll(io.LimitReader(f, limit))
		if err != nil {
			return text{Missing: "unreadable: " + cause(err)}
		}
		return text{Body: string(b), Size: n}
	}
	t := text{Size: n, Truncated: true, Head: headOnly}
	if headOnly {
		b, err := readAt(f, 0, limit)
		if err != nil {
			return text{Missing: "unreadable: " + cause(err)}
		}
		t.Body, t.Shown = string(b), int64(len(b))
		return t
	}
	head, err := readAt(f, 0, limit/2)
	if err != nil {
		return text{Missing: "unreadable: " + cause(err)}
	}
	tail, err := readAt(f, n-limit/2, limit/2)
	if err != nil {
		return text{Missing: "unreadable: " + cause(err)}
	}
	t.Shown = int64(len(head))
	t.Body = string(head) + fmt.Sprintf("\n… %s omitted …\n", size(n-int64(len(head)+len(tail)))) + string(tail)
	return t
}

func readAt(f *os.File, off, n int64) ([]byte, error) {
	b := make([]byte, n)
	k, err := f.ReadAt(b, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return b[:k], err
}
