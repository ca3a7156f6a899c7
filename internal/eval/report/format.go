package report

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbox/agentbox/internal/grade"
)

// ms formats a duration in milliseconds for a table: 850ms, 12.3s, 4m05s, 1h02m.
func ms(n int64) string {
	d := time.Duration(n) * time.Millisecond
	switch {
	case n < 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", n)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func usd(v float64) string { return fmt.Sprintf("$%.4f", v) }

// cost is an attempt's cost for a table: "unknown" when its model had no price,
// never a $0.0000 that would read as free.
func cost(a Attempt) string {
	if a.CostUnknown {
		return "unknown"
	}
	return usd(a.CostUSD)
}

// totalCost is a sum of costs of which unknown were unknown, out of n.
func totalCost(usdSum float64, unknown, n int) string {
	switch {
	case unknown == 0:
		return usd(usdSum)
	case unknown == n:
		return "unknown (no prices)"
	}
	return fmt.Sprintf("%s + unknown (%d of %d attempts without prices)", usd(usdSum), unknown, n)
}

// split is "passed/total" of a group of tests, and how many of them did not run.
func split(s grade.Split) string {
	out := fmt.Sprintf("%d/%d", len(s.Passed), len(s.Passed)+len(s.Failed)+len(s.Missing))
	if len(s.Missing) > 0 {
		out += fmt.Sprintf(" (%d missing)", len(s.Missing))
	}
	return out
}

// row is an attempt's cells in the results table, in the order of columns.
func row(a Attempt) []string {
	return []string{a.Task, fmt.Sprint(a.Attempt), string(a.outcome()),
		split(a.Verdict.FailToPass), split(a.Verdict.PassToPass),
		fmt.Sprint(a.Steps), ms(a.AgentMS), ms(a.GradeMS), cost(a)}
}

var columns = []string{"task", "attempt", "outcome", "fail_to_pass", "pass_to_pass",
	"steps", "agent time", "grade time", "cost"}

// numeric says which columns are right-aligned in Markdown.
var numeric = []bool{false, true, false, true, true, true, true, true, true}

// totalMS is the run's wall time: DurationMS, else FinishedAt - StartedAt.
func totalMS(r *Report) int64 {
	if r.DurationMS > 0 || r.StartedAt.IsZero() || r.FinishedAt.Before(r.StartedAt) {
		return r.DurationMS
	}
	return r.FinishedAt.Sub(r.StartedAt).Milliseconds()
}

// summaryLine is the one-line summary shared by every format: the strict
// resolved rate over every attempt, beside it in brackets the rate over the
// graded attempts when errors leave some out, and every outcome's count.
func summaryLine(r *Report, s Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "resolved %d/%d (%.1f%%)", s.Resolved, s.Attempts, 100*s.ResolvedRate)
	if g := s.Graded(); g != s.Attempts {
		fmt.Fprintf(&b, " [%.1f%% of %d graded]", 100*s.GradedRate, g)
	}
	fmt.Fprintf(&b, "; tasks resolved %d/%d", s.TasksResolved, s.Tasks)
	if pk := runPassAtK(Tasks(r.Attempts)); len(pk) > 1 {
		fmt.Fprintf(&b, "; pass@1 %.1f%%, pass@%d %.1f%%", 100*pk[0], len(pk), 100*pk[len(pk)-1])
	}
	fmt.Fprintf(&b, "; unresolved %d, tampered %d, harness_error %d, infra_error %d, model_error %d; total time %s; cost %s",
		s.Unresolved, s.Tampered, s.HarnessErrors, s.InfraErrors, s.ModelErrors, ms(totalMS(r)), totalCost(s.CostUSD, s.CostUnknown, s.Attempts))
	if r.Interrupted {
		b.WriteString("; interrupted: unfinished attempts are absent")
	}
	return b.String()
}

// oneLine makes s safe and short for a cell or a terminal: invalid UTF-8, control
// characters (ESC and the C1 set included, so no escape sequence reaches a
// terminal) and line breaks become spaces or U+FFFD, and the result is clipped to
// max runes with an ellipsis.
func oneLine(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError:
			b.WriteRune('\uFFFD')
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r):
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}
