package eval

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/eval/report"
)

func TestProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := NewLines(&b)
	p.Begin(3, 1, 1)
	p.Finished(report.Attempt{Task: "calc", Attempt: 1, Resolved: true, DurationMS: 1500})
	p.Finished(report.Attempt{Task: "C01", Attempt: 2, Tampered: true})
	out := b.String()
	for _, want := range []string{"resuming: 1 of 3 attempts already done (1 resolved)",
		"[2/3] calc #1 resolved in 1.5s | resolved 2 |", "[3/3] C01 #2 tampered in 0s | resolved 2 |", "eta 0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lines lack %q:\n%s", want, out)
		}
	}
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := NewBar(&b)
	p.Begin(3, 0, 0)
	for i, resolved := range []bool{true, false, true} {
		p.Started("t", i+1)
		p.Finished(report.Attempt{Task: "t", Attempt: i + 1, Resolved: resolved})
	}
	p.Wait()
	out := b.String()
	if !strings.Contains(out, "3/3") || !strings.Contains(out, "resolved 2") {
		t.Errorf("the bar's last frame lacks 3/3 and resolved 2:\n%q", out)
	}
	// A bar cut short (Ctrl-C) ends without waiting forever.
	var c bytes.Buffer
	q := NewBar(&c)
	q.Begin(5, 0, 0)
	q.Finished(report.Attempt{Task: "t", Attempt: 1})
	q.Wait()
}
