package report

import (
	"slices"
	"strings"

	"github.com/agentbox/agentbox/internal/grade"
)

// PassAtK is the unbiased estimate of pass@k for a task with n attempts of which
// c resolved: the chance that at least one of k attempts drawn without
// replacement from the n resolved, 1 - C(n-c,k)/C(n,k) (Chen et al. 2021,
// "Evaluating Large Language Models Trained on Code"). It is computed as the
// product 1 - Π_{i=n-c+1..n} (1 - k/i), which never forms a binomial and so
// neither overflows nor loses precision for large n. k must be in 1..n and c in
// 0..n; outside that it returns -1.
func PassAtK(n, c, k int) float64 {
	if n < 1 || k < 1 || k > n || c < 0 || c > n {
		return -1
	}
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// TaskStats aggregates the attempts of one task.
type TaskStats struct {
	Task     string `json:"task"`
	Title    string `json:"title,omitempty"`
	Attempts int    `json:"attempts"`
	Resolved int    `json:"resolved"`
	// PassAtK[k-1] is PassAtK(Attempts, Resolved, k), for k = 1..Attempts.
	PassAtK  []float64             `json:"pass_at_k"`
	Outcomes map[grade.Outcome]int `json:"outcomes"`
	// NoTests counts the attempts in which no test ran (NoTestRan).
	NoTests int `json:"no_tests,omitempty"`
	// CostUSD sums the attempts' known costs; CostUnknown counts the attempts
	// whose cost is unknown (no price for their model), which CostUSD leaves out.
	CostUSD     float64 `json:"cost_usd"`
	CostUnknown int     `json:"cost_unknown,omitempty"`
	AgentMS     int64   `json:"agent_ms"` // summed over the attempts
	DurationMS  int64   `json:"duration_ms"`
}

// Tasks aggregates attempts per task, in task order.
func Tasks(attempts []Attempt) []TaskStats {
	idx := map[string]int{}
	var out []TaskStats
	for _, a := range attempts {
		i, ok := idx[a.Task]
		if !ok {
			i = len(out)
			idx[a.Task] = i
			out = append(out, TaskStats{Task: a.Task, Title: a.Title, Outcomes: map[grade.Outcome]int{}})
		}
		s := &out[i]
		s.Attempts++
		o := a.outcome()
		s.Outcomes[o]++
		if o == grade.Resolved {
			s.Resolved++
		}
		if NoTestRan(a) {
			s.NoTests++
		}
		if a.CostUnknown {
			s.CostUnknown++
		} else {
			s.CostUSD += a.CostUSD
		}
		s.AgentMS += a.AgentMS
		s.DurationMS += a.DurationMS
	}
	for i := range out {
		s := &out[i]
		s.PassAtK = make([]float64, s.Attempts)
		for k := 1; k <= s.Attempts; k++ {
			s.PassAtK[k-1] = PassAtK(s.Attempts, s.Resolved, k)
		}
	}
	slices.SortFunc(out, func(a, b TaskStats) int { return strings.Compare(a.Task, b.Task) })
	return out
}

// runPassAtK is the run's pass@k for k = 1..the fewest attempts of any task: the
// mean over the tasks of their PassAtK.
func runPassAtK(tasks []TaskStats) []float64 {
	if len(tasks) == 0 {
		return nil
	}
	kmax := tasks[0].Attempts
	for _, t := range tasks {
		kmax = min(kmax, t.Attempts)
	}
	out := make([]float64, kmax)
	for k := range out {
		for _, t := range tasks {
			out[k] += t.PassAtK[k]
		}
		out[k] /= float64(len(tasks))
	}
	return out
}

// NoTestRan reports whether no test of the attempt ran: it was never graded, or
// its grading reported neither a pass nor a failure (every test missing, or the
// task lists none). Its outcome then says nothing about the tests.
func NoTestRan(a Attempt) bool {
	v := a.Verdict
	return len(v.FailToPass.Passed)+len(v.FailToPass.Failed)+len(v.PassToPass.Passed)+len(v.PassToPass.Failed) == 0
}
