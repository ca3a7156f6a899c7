package report

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/grade"
)

//go:embed report.html.tmpl
var pageTemplate string

//go:embed style.css
var pageStyle string

//go:embed viewer.js
var pageScript string

// csp is the page's Content-Security-Policy: nothing may load or run but the
// page's own style sheet and its own script, each named by its hash. It is the
// second line of defence: if escaping ever let a diff's markup through, no
// script of it would run (not inline, not a handler, not a URL) and nothing
// would be fetched.
var csp = "default-src 'none'; style-src 'sha256-" + hash(pageStyle) + "'; script-src 'sha256-" + hash(pageScript) +
	"'; img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(h[:])
}

// page is parsed once, on first use (not at the start of every agentbox command).
// The style sheet and the policy are spliced in as template
// text (trusted, copied verbatim), so the hash covers the exact bytes served.
// The script is a template.JS value instead: html/template would strip the
// comments of script in template text, and the hash is of the file as it is.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report.html").Parse(
		strings.NewReplacer("@CSS@", pageStyle, "@CSP@", csp).Replace(pageTemplate)))
})

type htmlPage struct {
	R        *Report
	Script   template.JS // pageScript
	Started  string
	Summary  string
	Columns  []string
	Attempts []attemptView
	Tasks    []taskView
	K        int // the k of the tasks table's pass@k column; 0: none past pass@1
	Charts   []chart
	// The filters' choices: every task, outcome and stop reason of the run.
	TaskIDs, Outcomes, Reasons []string
}

// taskView is a row of the tasks table.
type taskView struct {
	S               TaskStats
	Resolved        string // k/n
	Pass1, PassK    string
	Outcomes        string
	Cost, AgentTime string
}

type cell struct {
	Text, Class, Href string
}

// attemptView is an attempt with its files read.
type attemptView struct {
	A         Attempt
	ID        string
	Cells     []cell
	AgentTime string
	GradeTime string
	Cost      string
	Reason    string // the stop reason, "none" without one
	NoTests   bool   // no test ran (NoTestRan)
	Open      bool   // details start open: the attempt needs a look
	Graded    bool
	Trace     timeline
	Diff      text
	DiffLines []diffLine
	Log       text
}

// writeHTML writes report.html, reading each attempt's files under root (nil:
// none can be read).
func writeHTML(w io.Writer, root *os.Root, r *Report, s Summary) error {
	p := htmlPage{R: r, Script: template.JS(pageScript), Summary: summaryLine(r, s), Columns: append(slices.Clip(columns), "notes")}
	if !r.StartedAt.IsZero() {
		p.Started = r.StartedAt.UTC().Format(time.RFC3339)
	}
	tasks := r.Tasks
	if tasks == nil {
		tasks = Tasks(r.Attempts)
	}
	p.Charts = charts(r, tasks)
	if pk := runPassAtK(tasks); len(pk) > 1 {
		p.K = len(pk)
	}
	for _, t := range tasks {
		tv := taskView{S: t, Resolved: fmt.Sprintf("%d/%d", t.Resolved, t.Attempts), Pass1: pct(t.PassAtK[0]),
			Cost: totalCost(t.CostUSD, t.CostUnknown, t.Attempts), AgentTime: ms(t.AgentMS / int64(t.Attempts))}
		if p.K > 0 {
			tv.PassK = pct(t.PassAtK[p.K-1])
		}
		var parts []string
		for _, o := range grade.Outcomes {
			if n := t.Outcomes[o]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, o))
			}
		}
		tv.Outcomes = strings.Join(parts, ", ")
		p.Tasks = append(p.Tasks, tv)
		p.TaskIDs = append(p.TaskIDs, t.Task)
	}
	outcomes, reasons := map[string]bool{}, map[string]bool{}
	budget := int64(TotalCap)
	for i, a := range r.Attempts {
		v := attemptView{A: a, ID: fmt.Sprintf("attempt-%d", i+1),
			AgentTime: ms(a.AgentMS), GradeTime: ms(a.GradeMS), Cost: cost(a),
			Reason: cmp.Or(a.StopReason, "none"), NoTests: NoTestRan(a),
			Open:   a.outcome() != grade.Resolved,
			Graded: !reflect.ValueOf(a.Verdict).IsZero()}
		outcomes[string(a.outcome())], reasons[v.Reason] = true, true
		for j, c := range row(a) {
			cl := cell{Text: c}
			switch {
			case j == 0:
				cl.Href = "#" + v.ID
			case j == 2:
				cl.Class = "o"
			case numeric[j]:
				cl.Class = "n"
			}
			v.Cells = append(v.Cells, cl)
		}
		if v.NoTests {
			v.Cells = append(v.Cells, cell{Text: "⚠ no test ran", Class: "warn"})
		} else {
			v.Cells = append(v.Cells, cell{})
		}
		v.Trace = readTimeline(root, attemptFile(a.Dir, "trace.jsonl"))
		v.Diff = embed(root, attemptFile(a.Dir, "patch.diff"), &budget, true)
		v.DiffLines = classify(v.Diff.Body)
		v.Log = embed(root, attemptFile(a.Dir, "test.log"), &budget, false)
		p.Attempts = append(p.Attempts, v)
	}
	p.Outcomes, p.Reasons = slices.Sorted(maps.Keys(outcomes)), slices.Sorted(maps.Keys(reasons))
	// Task ids, titles and verdict strings are not checked for UTF-8 when they
	// are made; repairing the whole page (no markup is non-ASCII) keeps it valid.
	var buf bytes.Buffer
	if err := page().Execute(&buf, p); err != nil {
		return err
	}
	_, err := w.Write(bytes.ToValidUTF8(buf.Bytes(), []byte("\uFFFD")))
	return err
}

// embed reads a file for the page: capped at FileCap while the budget lasts,
// then at MinFileCap, and made valid UTF-8 (a cut can split a character).
func embed(root *os.Root, name string, budget *int64, headOnly bool) text {
	limit := max(min(int64(FileCap), *budget), MinFileCap)
	t := readCapped(root, name, limit, headOnly)
	*budget -= int64(len(t.Body))
	t.Body = strings.ToValidUTF8(t.Body, "\uFFFD")
	return t
}

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
