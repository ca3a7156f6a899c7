package report

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/grade"
)

//go:embed report.html.tmpl
var pageTemplate string

//go:embed style.css
var pageStyle string

// csp is the page's Content-Security-Policy: nothing may load or run but the
// page's own style sheet, named by its hash. It is the second line of defence:
// if escaping ever let a diff's markup through, no script would run and nothing
// would be fetched.
var csp = "default-src 'none'; style-src 'sha256-" + hash(pageStyle) + "'; base-uri 'none'; form-action 'none'"

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(h[:])
}

// page is parsed once. The style sheet and the policy are spliced in as template
// text (trusted, copied verbatim), so the hash covers the exact bytes served.
var page = template.Must(template.New("report.html").Parse(
	strings.NewReplacer("@CSS@", pageStyle, "@CSP@", csp).Replace(pageTemplate)))

type htmlPage struct {
	R        *Report
	Started  string
	Summary  string
	Columns  []string
	Attempts []attemptView
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
	Open      bool // details start open: the attempt needs a look
	Graded    bool
	Trace     timeline
	Diff      text
	DiffLines []diffLine
	Log       text
}

// writeHTML writes report.html, reading each attempt's files under root (nil:
// none can be read).
func writeHTML(w io.Writer, root *os.Root, r *Report, s Summary) error {
	p := htmlPage{R: r, Summary: summaryLine(r, s), Columns: columns}
	if !r.StartedAt.IsZero() {
		p.Started = r.StartedAt.UTC().Format(time.RFC3339)
	}
	budget := int64(TotalCap)
	for i, a := range r.Attempts {
		v := attemptView{A: a, ID: fmt.Sprintf("attempt-%d", i+1),
			AgentTime: ms(a.AgentMS), GradeTime: ms(a.GradeMS), Cost: usd(a.CostUSD),
			Open:   a.outcome() != grade.Resolved,
			Graded: !reflect.ValueOf(a.Verdict).IsZero()}
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
		v.Trace = readTimeline(root, attemptFile(a.Dir, "trace.jsonl"))
		v.Diff = embed(root, attemptFile(a.Dir, "patch.diff"), &budget, true)
		v.DiffLines = classify(v.Diff.Body)
		v.Log = embed(root, attemptFile(a.Dir, "test.log"), &budget, false)
		p.Attempts = append(p.Attempts, v)
	}
	// Task ids, titles and verdict strings are not checked for UTF-8 when they
	// are made; repairing the whole page (no markup is non-ASCII) keeps it valid.
	var buf bytes.Buffer
	if err := page.Execute(&buf, p); err != nil {
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
