package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Divergence is the first difference between two traces.
type Divergence struct {
	// Step is the 1-based position of the first differing line.
	Step int `json:"step"`
	// What differs: "decision", "result", "done", "end" or "length".
	What string `json:"what"`
	A    string `json:"a"`
	B    string `json:"b"`
}

func (d Divergence) String() string {
	return fmt.Sprintf("step %d: %s differs\n  a: %s\n  b: %s", d.Step, d.What, d.A, d.B)
}

// Diverge compares two traces line by line: the decision (tool, arguments as
// JSON values, stop), the result (everything but observed_at), whether the step
// ended the task, and the session's stop reason. It ignores timings, budgets and
// state, which differ between runs that behave the same.
func Diverge(a, b []Step) (Divergence, bool) {
	a, b = withSteps(a), withSteps(b)
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if dx, dy := decisionKey(x.Decision), decisionKey(y.Decision); dx != dy {
			return Divergence{Step: i + 1, What: "decision", A: dx, B: dy}, true
		}
		if rx, ry := resultKey(x), resultKey(y); rx != ry {
			return Divergence{Step: i + 1, What: "result", A: rx, B: ry}, true
		}
		if x.Done != y.Done {
			return Divergence{Step: i + 1, What: "done", A: fmt.Sprint(x.Done), B: fmt.Sprint(y.Done)}, true
		}
	}
	if len(a) != len(b) {
		return Divergence{Step: n + 1, What: "length", A: fmt.Sprintf("%d steps", len(a)), B: fmt.Sprintf("%d steps", len(b))}, true
	}
	ea, eb := endKey(a), endKey(b)
	if ea != eb {
		return Divergence{Step: len(a), What: "end", A: ea, B: eb}, true
	}
	return Divergence{}, false
}

// withSteps drops the step-0 line a session without steps writes.
func withSteps(s []Step) []Step {
	var out []Step
	for _, x := range s {
		if x.Step != 0 {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return s
	}
	// Keep the end of the session on the last step for endKey.
	if last := s[len(s)-1]; last.Step == 0 && last.End != nil {
		out[len(out)-1].End = last.End
	}
	return out
}

func decisionKey(d *Decision) string {
	if d == nil {
		return "(none)"
	}
	if d.Stop {
		return "stop: " + d.Reason
	}
	if d.ArgsError != "" {
		return d.Tool + " (unusable arguments: " + d.ArgsError + ")"
	}
	return d.Tool + " " + canonical(d.Args)
}

func resultKey(s Step) string {
	if s.Result == nil {
		if s.Error != "" {
			return "(error) " + s.Error
		}
		return "(none)"
	}
	r := *s.Result
	type key struct {
		OK        bool
		Data      string
		Text      string
		Error     any
		Refs      any
		Truncated bool
	}
	b, _ := json.Marshal(key{r.OK, canonical(r.Data), r.Text, r.Error, r.Refs, r.Truncated})
	return string(b)
}

func endKey(s []Step) string {
	if len(s) == 0 || s[len(s)-1].End == nil {
		return "(no end)"
	}
	return s[len(s)-1].End.StopReason
}

// canonical re-marshals JSON so that formatting and key order do not count.
func canonical(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
