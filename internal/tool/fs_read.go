package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"
)

type readArgs struct {
	Path      string `json:"path" jsonschema:"file path relative to the workspace root"`
	Offset    int64  `json:"offset,omitempty" jsonschema:"byte offset to start reading at"`
	Length    int64  `json:"length,omitempty" jsonschema:"number of bytes to read (default: to the end)"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to read, 1-based (instead of offset and length)"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line to read, inclusive (default: to the end)"`
}

type readOut struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Offset int64  `json:"offset"`
	// Bytes is how many bytes of the file the text holds (head and tail when cut).
	Bytes      int   `json:"bytes"`
	NextOffset int64 `json:"next_offset,omitempty" jsonschema:"where to continue a ranged read that was cut"`
	StartLine  int   `json:"start_line,omitempty"`
	EndLine    int   `json:"end_line,omitempty"`
	NextLine   int   `json:"next_line,omitempty" jsonschema:"where to continue a line read that was cut"`
	TotalLines int   `json:"total_lines,omitempty"`
	Binary     bool  `json:"binary,omitempty" jsonschema:"the file is binary; its content is not shown"`
	Truncated  bool  `json:"truncated"`
	Omitted    int64 `json:"omitted_bytes,omitempty"`
}

func (w *Workspace) fsRead() Spec {
	return Spec{
		Describe: w.resolving(describeRead),
		Name:     "fs.read",
		Description: "Read a file of the workspace. Without a range, a file larger than the output cap comes back as " +
			"its head and tail with truncated=true and a ref to the whole file. With offset/length (bytes) or " +
			"start_line/end_line, the range is returned from its start, cut at the cap, with next_offset or next_line to continue.",
		InputSchema: SchemaFor[readArgs](), OutputSchema: SchemaFor[readOut](),
		Effect: EffectRead, Idempotent: true, Scope: ScopeRead,
		Precondition: func(_ context.Context, raw json.RawMessage) error {
			var a readArgs
			if err := decode(raw, &a); err != nil {
				return err
			}
			lines := a.StartLine != 0 || a.EndLine != 0
			switch {
			case a.Offset < 0 || a.Length < 0 || a.StartLine < 0 || a.EndLine < 0:
				return Errorf(EINVAL, false, ActFixArgs, "offsets, lengths and lines must not be negative")
			case lines && (a.Offset != 0 || a.Length != 0):
				return Errorf(EINVAL, false, ActFixArgs, "give either offset/length or start_line/end_line, not both")
			case a.EndLine != 0 && a.EndLine < max(a.StartLine, 1):
				return Errorf(EINVAL, false, ActFixArgs, "end_line %d is before start_line %d", a.EndLine, a.StartLine)
			}
			return nil
		},
		Handler: w.read,
	}
}

func (w *Workspace) read(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a readArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	svc, o := w.o.Service, w.o
	st, err := svc.Stat(ctx, o.Owner, o.EnvID, a.Path)
	if err != nil {
		return Result{}, err
	}
	if st.Mode.IsDir() {
		return Result{}, Errorf(EINVAL, false, ActListDir, "%s is a directory; use fs.list", a.Path)
	}
	if !st.Mode.IsRegular() && st.Mode&fs.ModeSymlink == 0 {
		return Result{}, Errorf(EINVAL, false, ActStop, "%s is not a regular file", a.Path)
	}
	out := readOut{Path: a.Path, Size: st.Size, Offset: a.Offset}
	res := Result{Source: a.Path}
	switch {
	case a.StartLine != 0 || a.EndLine != 0:
		err = w.readLines(ctx, a, &out, &res)
	case a.Offset != 0 || a.Length != 0:
		err = w.readRange(ctx, a, &out, &res)
	default:
		err = w.readWhole(ctx, a, st.Size, &out, &res)
	}
	if err != nil {
		return Result{}, err
	}
	res.Data, res.Truncated = out, out.Truncated
	return res, nil
}

// readWhole returns a file that fits, or its head and tail and a ref to all of it.
func (w *Workspace) readWhole(ctx context.Context, a readArgs, size int64, out *readOut, res *Result) error {
	svc, o := w.o.Service, w.o
	max := int64(w.o.MaxOutput)
	if size <= max {
		// A symlink's size is its target's name: read one byte more than fits to
		// learn whether what it points at does.
		b, err := svc.ReadFile(ctx, o.Owner, o.EnvID, a.Path, 0, max+1)
		if err != nil {
			return err
		}
		if int64(len(b)) <= max {
			return setText(out, res, b, false)
		}
		if b, err = svc.ReadFile(ctx, o.Owner, o.EnvID, a.Path, 0, 0); err != nil {
			return err
		}
		out.Size = int64(len(b))
		if isBinary(b) {
			out.Binary, out.Truncated = true, true
			return nil
		}
		c := Clip(string(b), w.o.MaxOutput)
		out.Bytes, out.Omitted, out.Truncated = len(b)-c.OmittedBytes, int64(c.OmittedBytes), true
		res.Text, res.Refs = c.Text, w.exportRef(ctx, a.Path)
		return nil
	}
	headLen := max * 2 / 5
	head, err := svc.ReadFile(ctx, o.Owner, o.EnvID, a.Path, 0, headLen)
	if err != nil {
		return err
	}
	tail, err := svc.ReadFile(ctx, o.Owner, o.EnvID, a.Path, size-(max-headLen), max-headLen)
	if err != nil {
		return err
	}
	if isBinary(head) || isBinary(tail) {
		out.Binary, out.Truncated = true, true
		res.Refs = w.exportRef(ctx, a.Path)
		return nil
	}
	hs, ts := string(head[:runeStart(string(head), len(head))]), string(tail)
	for len(ts) > 0 && !utf8.RuneStart(ts[0]) {
		ts = ts[1:]
	}
	out.Bytes = len(hs) + len(ts)
	out.Omitted = size - int64(out.Bytes)
	out.Truncated = true
	res.Text = hs + fmt.Sprintf("\n[… %d bytes omitted of %d; read them with offset/length or start_line/end_line, or artifact.read the ref …]\n", out.Omitted, size) + ts
	res.Refs = w.exportRef(ctx, a.Path)
	return nil
}

// readRange returns [offset, offset+length) cut at the output cap from its start.
func (w *Workspace) readRange(ctx context.Context, a readArgs, out *readOut, res *Result) error {
	max := int64(w.o.MaxOutput)
	n := a.Length
	if n == 0 || n > max {
		n = max + 1 // one more byte says whether the range goes on
	}
	b, err := w.o.Service.ReadFile(ctx, w.o.Owner, w.o.EnvID, a.Path, a.Offset, n)
	if err != nil {
		return err
	}
	cut := int64(len(b)) > max || (a.Length > max)
	if int64(len(b)) > max {
		b = b[:runeStart(string(b), int(max))]
	}
	if cut {
		out.Truncated, out.NextOffset = true, a.Offset+int64(len(b))
	}
	return setText(out, res, b, out.Truncated)
}

// readLines returns lines [start, end] of the file, cut at the output cap at a line
// boundary.
func (w *Workspace) readLines(ctx context.Context, a readArgs, out *readOut, res *Result) error {
	b, err := w.o.Service.ReadFile(ctx, w.o.Owner, w.o.EnvID, a.Path, 0, 0)
	if err != nil {
		return err
	}
	if isBinary(b) {
		out.Binary = true
		return nil
	}
	all := strings.SplitAfter(string(b), "\n")
	if all[len(all)-1] == "" {
		all = all[:len(all)-1]
	}
	out.TotalLines = len(all)
	start := max(a.StartLine, 1)
	end := a.EndLine
	if end == 0 || end > len(all) {
		end = len(all)
	}
	out.StartLine = start
	if start > len(all) {
		out.EndLine = start - 1
		return nil
	}
	var sb strings.Builder
	i := start
	for ; i <= end; i++ {
		if sb.Len()+len(all[i-1]) > w.o.MaxOutput && sb.Len() > 0 {
			break
		}
		sb.WriteString(all[i-1])
	}
	out.EndLine = i - 1
	if i <= end {
		out.Truncated, out.NextLine = true, i
	}
	out.Bytes = sb.Len()
	res.Text = sb.String()
	if len(res.Text) > w.o.MaxOutput { // a single overlong line
		c := Clip(res.Text, w.o.MaxOutput)
		res.Text, out.Truncated = c.Text, true
		out.Omitted = int64(c.OmittedBytes)
	}
	return nil
}

func setText(out *readOut, res *Result, b []byte, truncated bool) error {
	if isBinary(b) {
		out.Binary = true
		return nil
	}
	out.Bytes, out.Truncated = len(b), truncated
	res.Text = string(b)
	return nil
}
