package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/agentbox/agentbox/internal/grade"
	"github.com/agentbox/agentbox/internal/tool"
	"github.com/agentbox/agentbox/internal/trace"
)

// Hostile transcript text: what a model said and what a tool returned, trying to
// close the <pre> it sits in and run script.
const (
	evilSay    = "I will fix it now. <script>window.pwned=1;document.title='pwned'</script>"
	evilResult = "</pre></details></script><img src=x onerror=\"window.pwned=2\"><svg onload=\"window.pwned=3\">"
)

// synthetic writes a results directory of tasks × attempts with every file an
// eval writes (a trace with the model's words, an event log with priced model
// responses, a diff, a verdict, a test log) and returns it with its report. The
// outcomes cycle deterministically; every 7th attempt ran no test. The attempt
// evil (task 3, attempt 2) has the hostile transcript.
func synthetic(t testing.TB, tasks, attempts int) (string, *Report, string) {
	t.Helper()
	dir := t.TempDir()
	r := &Report{Run: "synthetic", Suite: "synthetic", Policy: "openai", Model: "gpt-test", StartedAt: fixedTime}
	evil := ""
	at := fixedTime
	for ti := range tasks {
		id := fmt.Sprintf("task-%03d", ti)
		for n := 1; n <= attempts; n++ {
			rel := path.Join(id, fmt.Sprint(n))
			i := ti*attempts + n
			a := Attempt{Task: id, Title: fmt.Sprintf("Fix bug %d in module %d", ti, ti%7), Attempt: n, Dir: rel,
				StopReason: []string{"done", "done", "max_steps", "done", "max_cost"}[i%5],
				Steps:      4 + i%9, ToolCalls: 4 + i%9, CostUSD: 0.001 * float64(1+i%37), InputTokens: int64(1000 + i), OutputTokens: int64(100 + i),
				AgentMS: int64(1000 + (i*7919)%90000), GradeMS: int64(500 + i%3000)}
			a.DurationMS = a.AgentMS + a.GradeMS
			v := grade.Verdict{PatchApplied: true, ApplyMethod: "strict", TamperPaths: []string{}, Runs: 1,
				FailToPass: grade.Split{Failed: []string{"test_fix"}}, PassToPass: grade.Split{Passed: []string{"test_old"}}}
			switch {
			case (ti+n)%3 == 0:
				a.Resolved = true
				v.Resolved, v.FailToPass = true, grade.Split{Passed: []string{"test_fix"}}
			case i%23 == 0:
				a.Tampered = true
				v = grade.Verdict{Tampered: true, TamperReason: "protected", TamperPaths: []string{"tests/test_fix.py"}}
			case i%7 == 0:
				v = grade.Verdict{PatchApplied: true, ApplyMethod: "empty", TamperPaths: []string{},
					FailToPass: grade.Split{Missing: []string{"test_fix"}}, PassToPass: grade.Split{Missing: []string{"test_old"}}}
			}
			a.Verdict = v
			say, result := fmt.Sprintf("Reading the module of task %s first.", id), "def f(x):\n    return x\n"
			if ti == 3 && n == 2 {
				say, result, evil = evilSay, evilResult, rel
			}
			var tr, ev strings.Builder
			for s := 1; s <= a.Steps; s++ {
				st := trace.Step{Step: s, DurationMS: int64(5 * s),
					Decision: &trace.Decision{Tool: "fs.read", Args: json.RawMessage(fmt.Sprintf(`{"path":"mod%d.py"}`, s)), Text: say},
					Result:   &tool.Envelope{OK: true, Data: json.RawMessage(`{"size":24}`), Text: result, ObservedAt: at}}
				if s == 1 {
					st.Session = &trace.SessionInfo{Session: "s", Goal: "Fix the bug in " + id + ".", Policy: "openai"}
				}
				if s == a.Steps {
					st.Decision = &trace.Decision{Tool: "task.finish", Args: json.RawMessage(`{"summary":"done"}`), Text: "Finished: the tests should pass now."}
					st.Result = &tool.Envelope{OK: true, Data: json.RawMessage(`{"finished":true}`), ObservedAt: at}
					st.Done, st.End = true, &trace.SessionEnd{StopReason: a.StopReason, Steps: a.Steps}
				}
				b, _ := json.Marshal(st)
				tr.Write(append(b, '\n'))
				e, _ := json.Marshal(trace.Event{Seq: int64(s), Type: trace.ModelResponseReceived,
					Data: mustJSON(trace.ModelResponse{Model: "gpt-test", PriceKnown: true, CostUSD: a.CostUSD / float64(a.Steps)})})
				ev.Write(append(e, '\n'))
			}
			vj, _ := json.Marshal(v)
			files := map[string]string{"trace.jsonl": tr.String(), "events.jsonl": ev.String(), "grade.json": string(vj),
				"patch.diff": "--- a/mod.py\n+++ b/mod.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return x + 1\n",
				"test.log":   "test_fix " + string(a.outcome()) + "\ntest_old PASSED\n"}
			if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(dir, rel, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r.Attempts = append(r.Attempts, a)
		}
	}
	r.FinishedAt = r.StartedAt.Add(time.Hour)
	return dir, r, evil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestSyntheticPage writes the page of a 500-attempt run and checks, without a
// browser, that the hostile transcript is text and nothing of it is live, and
// how big the page is.
func TestSyntheticPage(t *testing.T) {
	dir, r, evil := synthetic(t, 50, 10)
	start := time.Now()
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("500 attempts: report.html %s, written (with report.json and report.md) in %v", size(fi.Size()), time.Since(start).Round(time.Millisecond))
	if fi.Size() > 16<<20 {
		t.Errorf("report.html of 500 attempts is %s, more than 16 MiB", size(fi.Size()))
	}
	doc := parse(t, filepath.Join(dir, "report.html"))
	checkInert(t, doc)
	var i int
	for j, a := range r.Attempts {
		if a.Dir == evil {
			i = j + 1
		}
	}
	s := all(doc, func(n *html.Node) bool { return n.Data == "section" && attr(n, "id") == fmt.Sprintf("attempt-%d", i) })[0]
	tr := textOf(all(s, class("transcript"))[0])
	for _, w := range []string{evilSay, evilResult, "tool call", "fs.read", `"path": "mod1.py"`, "Fix the bug in task-003."} {
		if !strings.Contains(tr, w) {
			t.Errorf("the transcript lacks %q as text", w)
		}
	}
}

// BenchmarkWrite500 writes the reports of a synthetic 500-attempt run (50 tasks
// × 10 attempts, every attempt's files present).
func BenchmarkWrite500(b *testing.B) {
	dir, r, _ := synthetic(b, 50, 10)
	b.ResetTimer()
	for b.Loop() {
		if err := Write(dir, r); err != nil {
			b.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "report.html"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "MiB/report.html")
}
