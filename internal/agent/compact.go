package agent

import (
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/internal/trace"
)

// compact compacts the context the policy sees once it holds Limits.CompactAfter
// results since the last compaction: the history so far is summarized, one line
// per call, and a policy that keeps a context shows the summary in place of
// those turns (ModelPolicy). The summary is the loop's own digest, not a
// model's: deterministic, so a resumed session compacts as the first driver
// did. ContextCompacting is recorded before the summary is made and
// ContextCompacted after; a driver that dies between them (crash point
// "compact:N", N the seq of ContextCompacting) leaves the journal's full
// history standing, and the next one discards the half-made compaction and
// makes it again.
func (l *loop) compact() {
	n := l.lim.CompactAfter
	h := l.st.History
	if n <= 0 || len(h)-l.st.Summarized < n {
		return
	}
	c := trace.Compaction{Through: h[len(h)-1].Decision.CallID, Turns: len(h)}
	began := l.log.Emit(trace.ContextCompacting, l.st.step, "", c)
	if _, stop := l.halted(); stop {
		return
	}
	c.Summary = digest(h)
	l.crash("compact", began.Seq)
	l.log.Emit(trace.ContextCompacted, l.st.step, "", c)
	if _, stop := l.halted(); stop {
		return
	}
	l.st.Summary, l.st.Summarized = c.Summary, c.Turns
}

// digest is one line per turn: its step, the call and how it ended.
func digest(h []Turn) string {
	var b strings.Builder
	for _, t := range h {
		fmt.Fprintf(&b, "step %d: %s %s: ", t.Step, t.Decision.Tool, clip(string(t.Decision.Args), 120))
		switch e := t.Result.Error; {
		case e != nil:
			fmt.Fprintf(&b, "failed (%s: %s)\n", e.Code, clip(e.Message, 120))
		default:
			fmt.Fprintf(&b, "ok %s\n", clip(string(t.Result.Data), 120))
		}
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
