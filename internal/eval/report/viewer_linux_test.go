package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/eval/report/reporttest"
	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/testenv"
)

// visible counts the rows of #results and the attempt sections that are laid
// out (an element display:none has no offsetParent), and lists the visible
// rows' tasks and outcomes.
const visible = `(() => {
  const rows = Array.from(document.querySelectorAll('#results tbody tr')).filter(r => r.offsetParent !== null);
  return {
    rows: rows.length,
    sections: Array.from(document.querySelectorAll('section.attempt')).filter(s => s.offsetParent !== null).length,
    tasks: rows.map(r => r.dataset.task),
    outcomes: rows.map(r => r.dataset.outcome),
    shown: document.getElementById('shown').textContent,
  };
})()`

type shown struct {
	Rows     int      `json:"rows"`
	Sections int      `json:"sections"`
	Tasks    []string `json:"tasks"`
	Outcomes []string `json:"outcomes"`
	Shown    string   `json:"shown"`
}

// TestViewer opens the page of a synthetic 500-attempt run in headless Chromium
// and uses it as a person would, through the browser's input events: a search
// narrows the table, a filter narrows it further, clearing brings every row
// back, the charts are drawn with the run's numbers, and a transcript opens on a
// click. The hostile transcript is shown as text and nothing of it runs.
func TestViewer(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: writes and renders a 500-attempt run (about 15 s)")
	}
	testenv.Require(t, reporttest.Available(), "needs Chromium at "+reporttest.ChromiumPath+" (apt-get install chromium)")
	dir, r, evil := synthetic(t, 50, 10)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	fi, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	b, err := reporttest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	tab, err := b.OpenTab(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	load, err := reporttest.Eval[float64](tab, `performance.getEntriesByType('navigation')[0].loadEventEnd`)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("500 attempts: report.html %s; Chromium loaded it in %v (load event at %.0f ms)", size(fi.Size()), tab.LoadTime.Round(time.Millisecond), load)

	if ready, err := reporttest.Eval[string](tab, `document.documentElement.dataset.viewer || ''`); err != nil || ready != "ready" {
		t.Fatalf("the viewer's script did not run (%q, %v); console %q", ready, err, tab.Console())
	}
	look := func(t *testing.T) shown {
		t.Helper()
		s, err := reporttest.Eval[shown](tab, visible)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := look(t); s.Rows != 500 || s.Sections != 500 || s.Shown != "500 of 500 attempts shown" {
		t.Fatalf("at load: %d rows, %d sections, %q", s.Rows, s.Sections, s.Shown)
	}

	// What the fixture says each filter must leave.
	count := func(keep func(Attempt) bool) int {
		n := 0
		for _, a := range r.Attempts {
			if keep(a) {
				n++
			}
		}
		return n
	}
	t.Run("search narrows the table", func(t *testing.T) {
		if err := tab.Type("#q", "task-042"); err != nil {
			t.Fatal(err)
		}
		s := look(t)
		if s.Rows != 10 || s.Sections != 10 || s.Shown != "10 of 500 attempts shown" {
			t.Fatalf("after searching task-042: %d rows, %d sections, %q", s.Rows, s.Sections, s.Shown)
		}
		for _, task := range s.Tasks {
			if task != "task-042" {
				t.Errorf("row of %s shown", task)
			}
		}
		// A second word narrows it to the task's attempts that ran out of steps.
		if err := tab.Type("#q", " max_steps"); err != nil {
			t.Fatal(err)
		}
		want := count(func(a Attempt) bool { return a.Task == "task-042" && a.StopReason == "max_steps" })
		if s := look(t); s.Rows != want || want == 0 || want == 10 {
			t.Errorf("after searching \"task-042 max_steps\": %d rows, want %d", s.Rows, want)
		}
	})
	t.Run("filter and clear", func(t *testing.T) {
		if err := tab.Click("#reset"); err != nil {
			t.Fatal(err)
		}
		if s := look(t); s.Rows != 500 {
			t.Fatalf("after clear: %d rows", s.Rows)
		}
		if err := tab.Choose("#f-outcome", "tampered"); err != nil {
			t.Fatal(err)
		}
		want := count(func(a Attempt) bool { return a.outcome() == grade.Tampered })
		s := look(t)
		if s.Rows != want || want == 0 {
			t.Fatalf("outcome tampered: %d rows, want %d", s.Rows, want)
		}
		for _, o := range s.Outcomes {
			if o != "tampered" {
				t.Errorf("a %s row is shown", o)
			}
		}
		if err := tab.Choose("#f-reason", "max_steps"); err != nil {
			t.Fatal(err)
		}
		want = count(func(a Attempt) bool { return a.outcome() == grade.Tampered && a.StopReason == "max_steps" })
		if s := look(t); s.Rows != want {
			t.Errorf("tampered and max_steps: %d rows, want %d", s.Rows, want)
		}
		if err := tab.Click("#reset"); err != nil {
			t.Fatal(err)
		}
		if s := look(t); s.Rows != 500 || s.Sections != 500 {
			t.Errorf("after clear: %d rows, %d sections", s.Rows, s.Sections)
		}
	})
	t.Run("charts render", func(t *testing.T) {
		// Each chart is laid out, and its bars add up to the run: one bar pair
		// per task, and the histograms' tooltips count every attempt.
		type drawn struct {
			W, H  float64
			Rects int
			Sum   int
			Res   []float64
		}
		for id, wantRects := range map[string]int{"chart-resolved": 50, "chart-cost": 0, "chart-time": 0} {
			d, err := reporttest.Eval[drawn](tab, fmt.Sprintf(`(() => {
  const svg = document.querySelector('#%s svg'); const box = svg.getBoundingClientRect();
  const rects = Array.from(svg.querySelectorAll('rect'));
  return {W: box.width, H: box.height, Rects: rects.length,
    Sum: rects.reduce((n, r) => n + (parseInt((r.textContent.match(/: (\d+) attempts$/) || [0, 0])[1], 10)), 0),
    Res: Array.from(svg.querySelectorAll('rect.res')).map(r => r.getBoundingClientRect().width)};
})()`, id))
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if d.W < 100 || d.H < 50 || d.Rects == 0 {
				t.Errorf("%s is not drawn: %+v", id, d)
			}
			if id != "chart-resolved" && d.Sum != 500 {
				t.Errorf("%s: the bars count %d attempts, want 500", id, d.Sum)
			}
			if id == "chart-resolved" {
				resolvedTasks := 0
				for _, ts := range Tasks(r.Attempts) {
					if ts.Resolved > 0 {
						resolvedTasks++
					}
				}
				if len(d.Res) != resolvedTasks || d.Rects < wantRects {
					t.Errorf("%s: %d green bars for %d tasks with a resolved attempt, %d rects", id, len(d.Res), resolvedTasks, d.Rects)
				}
			}
		}
	})
	t.Run("a transcript opens and is inert", func(t *testing.T) { openTranscript(t, tab, r, evil) })
	if c := tab.Console(); len(c) != 0 {
		t.Errorf("console (a CSP refusal or an error of the viewer): %q", c)
	}
}

// openTranscript clicks the summary of the hostile attempt's transcript (evil is
// its directory) and checks that it opens, shows the model's words, the calls
// and the results as text, and that nothing of them is live: no image, no
// handler, no script but the page's, no global, the title unchanged.
func openTranscript(t *testing.T, tab *reporttest.Tab, r *Report, evil string) {
	t.Helper()
	i := 0
	for j, a := range r.Attempts {
		if a.Dir == evil {
			i = j + 1
		}
	}
	sel := fmt.Sprintf("#attempt-%d details.transcript", i)
	text := func() (struct {
		Open bool   `json:"open"`
		Text string `json:"text"`
	}, error) {
		return reporttest.Eval[struct {
			Open bool   `json:"open"`
			Text string `json:"text"`
		}](tab, fmt.Sprintf(`(() => { const d = document.querySelector(%q); return {open: d.open, text: d.innerText}; })()`, sel))
	}
	before, err := text()
	if err != nil {
		t.Fatal(err)
	}
	if before.Open || strings.Contains(before.Text, "assistant") {
		t.Fatalf("the transcript is open before the click: %+v", before)
	}
	if err := tab.Click(sel + " > summary"); err != nil {
		t.Fatal(err)
	}
	after, err := text()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"assistant", evilSay, "tool call", "fs.read", evilResult, "task.finish", "Finished: the tests should pass now."} {
		if !after.Open || !strings.Contains(after.Text, w) {
			t.Errorf("the opened transcript (open %v) does not show %q:\n%.600s", after.Open, w, after.Text)
		}
	}
	type live struct {
		Title    string `json:"title"`
		Pwned    bool   `json:"pwned"`
		Scripts  int    `json:"scripts"`
		Imgs     int    `json:"imgs"`
		Handlers int    `json:"handlers"`
	}
	l, err := reporttest.Eval[live](tab, `({title: document.title, pwned: 'pwned' in window, scripts: document.scripts.length,
  imgs: document.images.length,
  handlers: Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length})`)
	if err != nil {
		t.Fatal(err)
	}
	if (l != live{Title: "agentbox eval synthetic", Scripts: 1}) {
		t.Errorf("the hostile transcript is live: %+v", l)
	}
}
