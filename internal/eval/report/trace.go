package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbox/agentbox/internal/trace"
)

// timeline is an attempt's trace.jsonl as the page shows it.
type timeline struct {
	Missing      string // "not recorded", or why it could not be read
	Goal         string
	Steps        []stepLine
	Omitted      int      // steps past StepCap
	Problems     []string // lines that could not be read, the first maxProblems
	MoreProblems int
	Stop         string // the session's stop reason, "" when the trace has no end
	Detail       string
	budget       int // bytes of transcript text left (TranscriptCap)
}

// stepLine is one step of the timeline.
type stepLine struct {
	N        int
	Tool     string
	Args     string
	Status   string // ok, an error code, stop, args error, failed
	Class    string // ok or err, for colour
	Duration string
	Result   string // one line

	// The step in full, for the transcript: what the model said, the tool it
	// called ("" for a stop) with the arguments (indented JSON), and what came
	// back (the tool's result, an error, why the session stopped), each capped.
	Say, Call, Input, Output string
}

// readTimeline reads name under root. It keeps one line in memory at a time, so a
// long trace costs its shown steps only.
func readTimeline(root *os.Root, name string) timeline {
	f, _, missing := open(root, name)
	if f == nil {
		return timeline{Missing: missing}
	}
	defer f.Close()
	tl := timeline{budget: TranscriptCap}
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := readLine(br, LineCap)
		switch {
		case errors.Is(err, errLong):
			tl.problem(fmt.Sprintf("line %d: longer than %s, skipped", n, size(LineCap)))
			continue
		case err != nil && err != io.EOF:
			tl.problem(fmt.Sprintf("line %d: %s", n, cause(err)))
			return tl
		}
		if len(bytes.TrimSpace(line)) > 0 {
			tl.add(n, line)
		}
		if err == io.EOF {
			return tl
		}
	}
}

const maxProblems = 20

func (tl *timeline) problem(p string) {
	if len(tl.Problems) == maxProblems {
		tl.MoreProblems++
		return
	}
	tl.Problems = append(tl.Problems, p)
}

var errLong = errors.New("line too long")

// readLine returns the next line without its newline. A line longer than limit
// bytes is read to its end, discarded, and reported as errLong.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long && len(line)+len(chunk) > limit {
			long, line = true, nil
		}
		if !long {
			line = append(line, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && err != io.EOF:
			return nil, err
		case long:
			return nil, errLong
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

func (tl *timeline) add(n int, line []byte) {
	var s trace.Step
	if err := json.Unmarshal(line, &s); err != nil {
		tl.problem(fmt.Sprintf("line %d: not a trace step: %v", n, err))
		return
	}
	if s.Session != nil {
		tl.Goal = s.Session.Goal
	}
	if s.End != nil {
		tl.Stop, tl.Detail = s.End.StopReason, s.End.Detail
	}
	if s.Step == 0 { // the line that carries only the session's end
		return
	}
	if len(tl.Steps) == StepCap {
		tl.Omitted++
		return
	}
	l := summarize(s)
	tl.transcribe(&l, s)
	tl.Steps = append(tl.Steps, l)
}

// transcribe fills the transcript fields of l from s: MessageCap bytes of each
// while the attempt's TranscriptCap lasts, then MinMessageCap.
func (tl *timeline) transcribe(l *stepLine, s trace.Step) {
	clip := func(v string) string {
		limit := max(min(MessageCap, tl.budget), MinMessageCap)
		v = strings.ToValidUTF8(v, "\uFFFD")
		if len(v) > limit {
			v = strings.ToValidUTF8(v[:limit], "") + fmt.Sprintf("\n… cut: %s more", size(int64(len(v)-limit)))
		}
		tl.budget -= len(v)
		return v
	}
	var out []string
	if d := s.Decision; d != nil {
		l.Say = clip(strings.TrimSpace(d.Text))
		if !d.Stop {
			l.Call = oneLine(d.Tool, 60)
		} else {
			out = append(out, "stopped: "+d.Reason)
		}
		if d.ArgsError != "" {
			out = append(out, "unusable arguments, the tool did not run: "+d.ArgsError)
		}
		if len(d.Args) > 0 {
			var b bytes.Buffer
			if json.Indent(&b, d.Args, "", "  ") == nil {
				l.Input = clip(b.String())
			} else {
				l.Input = clip(string(d.Args))
			}
		}
	}
	if s.Error != "" {
		out = append(out, s.Error)
	}
	if r := s.Result; r != nil {
		if r.Error != nil {
			out = append(out, string(r.Error.Code)+": "+r.Error.Message)
		}
		if len(r.Data) > 0 && string(r.Data) != "null" {
			var b bytes.Buffer
			if json.Compact(&b, r.Data) == nil {
				out = append(out, b.String())
			}
		}
		if r.Text != "" {
			out = append(out, r.Text)
		}
		if r.Truncated {
			out = append(out, "(the tool truncated its output)")
		}
	}
	l.Output = clip(strings.Join(out, "\n"))
}

// summarize reduces a step to a timeline line.
func summarize(s trace.Step) stepLine {
	l := stepLine{N: s.Step, Duration: ms(s.DurationMS), Status: "ok", Class: "ok"}
	d, res := s.Decision, s.Result
	if d != nil {
		l.Tool = oneLine(d.Tool, 60)
		if len(d.Args) > 0 {
			var b bytes.Buffer
			if json.Compact(&b, d.Args) == nil {
				l.Args = oneLine(b.String(), 120)
			} else {
				l.Args = oneLine(string(d.Args), 120)
			}
		}
	}
	switch {
	case s.Error != "":
		l.Status, l.Class, l.Result = "failed", "err", s.Error
		if s.ErrorClass != "" {
			l.Status = "failed: " + s.ErrorClass
		}
	case d == nil:
		l.Status, l.Class, l.Result = "no decision", "err", ""
	case d.Stop:
		l.Tool, l.Status, l.Result = "(stop)", "stop", d.Reason
	case d.ArgsError != "":
		l.Status, l.Class, l.Result = "args error", "err", d.ArgsError
	case res == nil:
		l.Status, l.Class = "no result", "err"
		l.Result = d.Text
	case !res.OK:
		l.Status, l.Class = "error", "err"
		if res.Error != nil {
			l.Status, l.Result = string(res.Error.Code), res.Error.Message
		}
	default:
		l.Result = firstLine(res.Text)
		if l.Result == "" && len(res.Data) > 0 && string(res.Data) != "null" {
			var b bytes.Buffer
			if json.Compact(&b, res.Data) == nil {
				l.Result = b.String()
			}
		}
		if res.Truncated {
			l.Result = "(truncated) " + l.Result
		}
		if s.Done {
			l.Status = "ok, done"
		}
	}
	l.Status = oneLine(l.Status, 40)
	l.Result = oneLine(l.Result, 160)
	return l
}

func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}
