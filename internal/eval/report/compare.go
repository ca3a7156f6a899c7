package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Comparison is what changed per task from run A (the baseline) to run B: the
// JSON of `agentbox report compare`.
type Comparison struct {
	A RunSide `json:"a"`
	B RunSide `json:"b"`
	// Tasks has every task of either run, in task order.
	Tasks []TaskDelta `json:"tasks"`
	// Regressions and Improvements are the tasks whose resolved rate fell or
	// rose; OnlyA and OnlyB those that only one run has.
	Regressions  []string `json:"regressions"`
	Improvements []string `json:"improvements"`
	OnlyA        []string `json:"only_a"`
	OnlyB        []string `json:"only_b"`
	// Notes say what makes the runs hard to compare (different suites, an
	// interrupted run).
	Notes []string `json:"notes,omitempty"`
}

// RunSide is one run of a comparison.
type RunSide struct {
	Run          string  `json:"run"`
	Dir          string  `json:"dir"`
	Suite        string  `json:"suite"`
	Policy       string  `json:"policy"`
	Model        string  `json:"model,omitempty"`
	Interrupted  bool    `json:"interrupted,omitempty"`
	Tasks        int     `json:"tasks"`
	Attempts     int     `json:"attempts"`
	Resolved     int     `json:"resolved"`
	ResolvedRate float64 `json:"resolved_rate"`
	// CostUSD sums the known costs; CostUnknown counts the attempts without.
	CostUSD     float64 `json:"cost_usd"`
	CostUnknown int     `json:"cost_unknown,omitempty"`
	AgentMS     int64   `json:"agent_ms"` // summed over the attempts
}

// Change is how a task moved from A to B.
type Change string

const (
	Regression  Change = "regression"  // B resolves it less often than A
	Improvement Change = "improvement" // more often
	Same        Change = "same"
	OnlyInA     Change = "only_a"
	OnlyInB     Change = "only_b"
)

// TaskDelta is one task of a comparison.
type TaskDelta struct {
	Task   string    `json:"task"`
	Change Change    `json:"change"`
	A      *TaskSide `json:"a"` // nil when run A has no attempt of the task
	B      *TaskSide `json:"b"`
	// ResolvedRateDelta is B's resolved rate (pass@1) minus A's.
	ResolvedRateDelta float64 `json:"resolved_rate_delta"`
	// CostDeltaUSD is B's mean cost per attempt minus A's; nil when either is
	// unknown.
	CostDeltaUSD *float64 `json:"cost_delta_usd"`
	// AgentMSDelta is B's mean agent time per attempt minus A's.
	AgentMSDelta int64 `json:"agent_ms_delta"`
}

// TaskSide is one run's attempts of a task.
type TaskSide struct {
	Attempts     int     `json:"attempts"`
	Resolved     int     `json:"resolved"`
	ResolvedRate float64 `json:"resolved_rate"`
	// MeanCostUSD is the mean cost per attempt; CostKnown is false when an
	// attempt's cost is unknown, and the mean then means nothing.
	MeanCostUSD float64 `json:"mean_cost_usd"`
	CostKnown   bool    `json:"cost_known"`
	MeanAgentMS int64   `json:"mean_agent_ms"`
}

func side(s TaskStats) *TaskSide {
	n := float64(s.Attempts)
	return &TaskSide{Attempts: s.Attempts, Resolved: s.Resolved, ResolvedRate: float64(s.Resolved) / n,
		MeanCostUSD: s.CostUSD / n, CostKnown: s.CostUnknown == 0, MeanAgentMS: s.AgentMS / int64(s.Attempts)}
}

func runSide(r *Report, dir string) RunSide {
	s := Summarize(r.Attempts)
	var agent int64
	for _, a := range r.Attempts {
		agent += a.AgentMS
	}
	return RunSide{Run: r.Run, Dir: dir, Suite: r.Suite, Policy: r.Policy, Model: r.Model, Interrupted: r.Interrupted,
		Tasks: s.Tasks, Attempts: s.Attempts, Resolved: s.Resolved, ResolvedRate: s.ResolvedRate,
		CostUSD: s.CostUSD, CostUnknown: s.CostUnknown, AgentMS: agent}
}

// Compare compares run b against the baseline a, read from the directories
// dirA and dirB (which label the sides only). An attempt without a recorded
// outcome (a report.json of an older agentbox) is classified as Write does.
func Compare(a *Report, dirA string, b *Report, dirB string) *Comparison {
	c := &Comparison{A: runSide(a, dirA), B: runSide(b, dirB),
		Regressions: []string{}, Improvements: []string{}, OnlyA: []string{}, OnlyB: []string{}}
	ta, tb := map[string]TaskStats{}, map[string]TaskStats{}
	for _, t := range Tasks(a.Attempts) {
		ta[t.Task] = t
	}
	for _, t := range Tasks(b.Attempts) {
		tb[t.Task] = t
	}
	var ids []string
	for id := range ta {
		ids = append(ids, id)
	}
	for id := range tb {
		if _, ok := ta[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		d := TaskDelta{Task: id}
		sa, inA := ta[id]
		sb, inB := tb[id]
		switch {
		case !inB:
			d.Change, d.A = OnlyInA, side(sa)
			c.OnlyA = append(c.OnlyA, id)
		case !inA:
			d.Change, d.B = OnlyInB, side(sb)
			c.OnlyB = append(c.OnlyB, id)
		default:
			d.A, d.B = side(sa), side(sb)
			d.ResolvedRateDelta = d.B.ResolvedRate - d.A.ResolvedRate
			d.AgentMSDelta = d.B.MeanAgentMS - d.A.MeanAgentMS
			if d.A.CostKnown && d.B.CostKnown {
				v := d.B.MeanCostUSD - d.A.MeanCostUSD
				d.CostDeltaUSD = &v
			}
			// Compare the counts, not the float rates: 1/3 against 2/6 is no change.
			switch x, y := sa.Resolved*sb.Attempts, sb.Resolved*sa.Attempts; {
			case y < x:
				d.Change = Regression
				c.Regressions = append(c.Regressions, id)
			case y > x:
				d.Change = Improvement
				c.Improvements = append(c.Improvements, id)
			default:
				d.Change = Same
			}
		}
		c.Tasks = append(c.Tasks, d)
	}
	if a.Suite != b.Suite {
		c.Notes = append(c.Notes, fmt.Sprintf("the runs are of different suites (%s and %s)", a.Suite, b.Suite))
	}
	for _, s := range []RunSide{c.A, c.B} {
		if s.Interrupted {
			c.Notes = append(c.Notes, fmt.Sprintf("run %s was interrupted: its unfinished attempts are absent", s.Run))
		}
	}
	return c
}

// compareColumns are the columns of the comparison's table.
var compareColumns = []string{"task", "change", "A resolved", "B resolved", "Δ resolved rate", "Δ cost/attempt", "Δ agent time/attempt"}

func (d TaskDelta) cells() []string {
	frac := func(s *TaskSide) string {
		if s == nil {
			return "-"
		}
		return fmt.Sprintf("%d/%d", s.Resolved, s.Attempts)
	}
	rate, cost, tm := "-", "-", "-"
	if d.A != nil && d.B != nil {
		rate = signedPP(d.ResolvedRateDelta)
		cost = "unknown"
		if d.CostDeltaUSD != nil {
			cost = signedUSD(*d.CostDeltaUSD)
		}
		tm = signedMS(d.AgentMSDelta)
	}
	return []string{d.Task, string(d.Change), frac(d.A), frac(d.B), rate, cost, tm}
}

// signedUSD and signedMS give a delta its sign; one that rounds to zero has none.
func signedUSD(v float64) string {
	switch s := usd(math.Abs(v)); {
	case s == usd(0):
		return s
	case v < 0:
		return "-" + s
	default:
		return "+" + s
	}
}

func signedMS(v int64) string {
	switch {
	case v < 0:
		return "-" + ms(-v)
	case v > 0:
		return "+" + ms(v)
	}
	return ms(0)
}

func signedPP(rate float64) string {
	if s := fmt.Sprintf("%.1f pp", math.Abs(100*rate)); s != "0.0 pp" {
		return fmt.Sprintf("%+.1f pp", 100*rate)
	}
	return "0.0 pp"
}

// headline is the comparison's summary lines, shared by the text and Markdown.
func (c *Comparison) headline() []string {
	line := func(name string, s RunSide) string {
		model := ""
		if s.Model != "" {
			model = ", model " + s.Model
		}
		return fmt.Sprintf("%s: %s (%s, policy %s%s): resolved %d/%d (%.1f%%), cost %s, agent time %s",
			name, s.Run, s.Dir, s.Policy, model, s.Resolved, s.Attempts, 100*s.ResolvedRate,
			totalCost(s.CostUSD, s.CostUnknown, s.Attempts), ms(s.AgentMS))
	}
	out := []string{line("A", c.A), line("B", c.B),
		fmt.Sprintf("resolved rate %s; %d regressions, %d improvements, %d tasks only in A, %d only in B",
			signedPP(c.B.ResolvedRate-c.A.ResolvedRate), len(c.Regressions), len(c.Improvements), len(c.OnlyA), len(c.OnlyB))}
	for _, n := range c.Notes {
		out = append(out, "note: "+n)
	}
	return out
}

// Text writes the comparison for a terminal: the two runs, then the tasks that
// changed (regressions first), then the number of tasks that did not. Task ids
// and run labels are cleaned of control characters.
func (c *Comparison) Text(w io.Writer) error {
	var b strings.Builder
	for _, l := range c.headline() {
		b.WriteString(oneLine(l, 1000) + "\n")
	}
	changed := c.changed()
	if len(changed) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(compareColumns, "\t"))
		for _, d := range changed {
			cells := d.cells()
			cells[0] = oneLine(cells[0], 60)
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		tw.Flush()
	}
	if same := len(c.Tasks) - len(changed); same > 0 {
		fmt.Fprintf(&b, "%d tasks unchanged\n", same)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// changed is the tasks whose change is not Same: regressions, improvements,
// then the tasks of one run only, each group in task order.
func (c *Comparison) changed() []TaskDelta {
	rank := map[Change]int{Regression: 0, Improvement: 1, OnlyInA: 2, OnlyInB: 3}
	var out []TaskDelta
	for _, d := range c.Tasks {
		if d.Change != Same {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(x, y TaskDelta) int { return cmp.Compare(rank[x.Change], rank[y.Change]) })
	return out
}

// Markdown writes the comparison as Markdown: the two runs and a table of
// every task, the changed ones first.
func (c *Comparison) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# agentbox report compare: %s → %s\n\n", mdCell(c.A.Run), mdCell(c.B.Run))
	for _, l := range c.headline() {
		b.WriteString("- " + mdEscaper.Replace(oneLine(l, 1000)) + "\n")
	}
	b.WriteString("\n|")
	for _, col := range compareColumns {
		b.WriteString(" " + col + " |")
	}
	b.WriteString("\n|---|---|---:|---:|---:|---:|---:|\n")
	rows := c.changed()
	for _, d := range c.Tasks {
		if d.Change == Same {
			rows = append(rows, d)
		}
	}
	for _, d := range rows {
		b.WriteString("|")
		for _, cell := range d.cells() {
			b.WriteString(" " + mdCell(cell) + " |")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
