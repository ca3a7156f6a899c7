package report

import (
	"math"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/agentbox/agentbox/internal/grade"
)

// TestPassAtK checks the estimator against values of 1 - C(n-c,k)/C(n,k)
// computed by hand or exactly, and against the binomial form for every n, c, k
// up to 40.
func TestPassAtK(t *testing.T) {
	for _, tc := range []struct {
		n, c, k int
		want    float64
	}{
		{10, 3, 1, 0.3},                  // pass@1 is c/n
		{10, 3, 5, 1 - 21.0/252},         // C(7,5)/C(10,5)
		{10, 3, 8, 1},                    // n-c < k: any 8 of 10 include a success
		{5, 0, 1, 0},                     // never resolved
		{5, 0, 5, 0},                     //
		{5, 5, 1, 1},                     // always resolved
		{2, 1, 2, 1},                     // both drawn: the one success is among them
		{100, 3, 10, 0.273469387755102},  // 1 - C(97,10)/C(100,10)
		{200, 10, 100, 0.99922897393728}, // binomials of 10^58: the product form keeps its precision
		{1, 1, 1, 1},
		{0, 0, 1, -1}, // no attempts
		{3, 1, 4, -1}, // k > n
		{3, 1, 0, -1}, // k < 1
		{3, 4, 1, -1}, // c > n
	} {
		if got := PassAtK(tc.n, tc.c, tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("PassAtK(%d, %d, %d) = %.15f, want %.15f", tc.n, tc.c, tc.k, got, tc.want)
		}
	}
	for n := 1; n <= 40; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				num := new(big.Rat).SetFrac(new(big.Int).Binomial(int64(n-c), int64(k)), new(big.Int).Binomial(int64(n), int64(k)))
				q, _ := num.Float64()
				if got, want := PassAtK(n, c, k), 1-q; math.Abs(got-want) > 1e-12 {
					t.Fatalf("PassAtK(%d, %d, %d) = %v, binomial form %v", n, c, k, got, want)
				}
			}
		}
	}
}

func TestTasks(t *testing.T) {
	tv := func(s grade.Split) grade.Verdict { return grade.Verdict{FailToPass: s} }
	ran := tv(grade.Split{Failed: []string{"t"}})
	atts := []Attempt{
		{Task: "b", Attempt: 1, Resolved: true, CostUSD: 0.5, AgentMS: 100, Verdict: tv(grade.Split{Passed: []string{"t"}})},
		{Task: "a", Attempt: 1, CostUnknown: true, CostUSD: 0.25, AgentMS: 300, Verdict: ran},
		{Task: "b", Attempt: 2, CostUSD: 0.25, AgentMS: 200, Verdict: ran},
		{Task: "b", Attempt: 3, Resolved: true, AgentMS: 300, Verdict: tv(grade.Split{Passed: []string{"t"}})},
		{Task: "a", Attempt: 2, StopReason: "model_error"}, // never graded: no test ran
	}
	want := []TaskStats{
		{Task: "a", Attempts: 2, PassAtK: []float64{0, 0}, Outcomes: map[grade.Outcome]int{grade.Unresolved: 1, grade.ModelError: 1},
			NoTests: 1, CostUnknown: 1, AgentMS: 300},
		{Task: "b", Attempts: 3, Resolved: 2, PassAtK: []float64{2.0 / 3, 1, 1}, Outcomes: map[grade.Outcome]int{grade.Resolved: 2, grade.Unresolved: 1},
			CostUSD: 0.75, AgentMS: 600},
	}
	got := Tasks(atts)
	if d := cmp.Diff(want, got, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-12 })); d != "" {
		t.Errorf("Tasks (-want +got):\n%s", d)
	}
	// The run's pass@k goes up to the fewest attempts of a task (2) and is the
	// mean over the tasks.
	if d := cmp.Diff([]float64{(0 + 2.0/3) / 2, (0 + 1.0) / 2}, runPassAtK(got), cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-12 })); d != "" {
		t.Errorf("runPassAtK (-want +got):\n%s", d)
	}
	if runPassAtK(nil) != nil {
		t.Error("runPassAtK of no task is not empty")
	}
}

// An attempt whose event log has a model response without a price has an
// unknown cost; one whose responses were all priced, or that has no log, has not.
func TestUnpriced(t *testing.T) {
	dir := t.TempDir()
	logs := map[string]string{
		"priced":   `{"seq":1,"type":"SessionCreated","data":{"goal":"ModelResponseReceived"}}` + "\n" + `{"seq":2,"type":"ModelResponseReceived","data":{"price_known":true,"cost_usd":0.1}}` + "\n",
		"unpriced": `{"seq":1,"type":"ModelResponseReceived","data":{"price_known":true}}` + "\n" + `{"seq":2,"type":"ModelResponseReceived","data":{"price_known":false,"cost_usd":0}}`,
		// A tool result that quotes the event's type is not a model response.
		"quoted": `{"seq":1,"type":"ToolExecutionFinished","data":{"result":{"text":"\"type\":\"ModelResponseReceived\",\"price_known\":false"}}}` + "\n",
		"broken": "{not json\n",
	}
	for name, log := range logs {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "events.jsonl"), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, want := range map[string]bool{"priced": false, "unpriced": true, "quoted": false, "broken": false, "absent": false, "../x": false} {
		if got := unpriced(root, name); got != want {
			t.Errorf("unpriced(%s) = %v, want %v", name, got, want)
		}
	}
	// Write marks the attempt and the page says "unknown", not $0.0000.
	r := &Report{Run: "r", Attempts: []Attempt{{Task: "t", Attempt: 1, Dir: "unpriced"}, {Task: "t", Attempt: 2, Dir: "priced", CostUSD: 0.1}}}
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Attempts[0].CostUnknown || back.Attempts[1].CostUnknown || back.Summary.CostUnknown != 1 {
		t.Errorf("cost_unknown: %v %v, summary %d", back.Attempts[0].CostUnknown, back.Attempts[1].CostUnknown, back.Summary.CostUnknown)
	}
	doc := parse(t, filepath.Join(dir, "report.html"))
	rows := all(all(doc, func(n *html.Node) bool { return attr(n, "id") == "results" })[0], tag("tr"))[1:]
	cells := all(rows[0], tag("td"))
	if got := textOf(cells[8]); got != "unknown" {
		t.Errorf("cost cell %q, want unknown", got)
	}
}
