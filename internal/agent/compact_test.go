package agent

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/model/modeltest"
	"github.com/agentbox/agentbox/internal/trace"
)

// TestModelCompacted: with CompactAfter 2 the loop compacts the context after
// two results (ContextCompacting, then ContextCompacted with the digest), and
// the model's next request through each protocol is the goal and the summary
// in one message: no tool results, no earlier replies, the protocol's rules kept.
func TestModelCompacted(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv, pol := newModel(t, p.anthropic, p.stream, nil,
				modeltest.Turn{Calls: []modeltest.Call{{Name: "fs_read", Args: `{"path":"calc.py"}`}}},
				modeltest.Turn{Calls: []modeltest.Call{{Name: "fs_write", Args: `{"path":"notes.txt","content":"x"}`}}},
				modeltest.Turn{Text: "Done reading."})
			reg, _ := newMemCalc(t)
			res, evs, _ := session(t, Options{Policy: pol, Tools: reg, Limits: Limits{CompactAfter: 2}})
			if res.StopReason != StopPolicy {
				t.Fatalf("%+v", res)
			}
			var kinds []trace.Type
			for _, e := range evs {
				if e.Type == trace.ContextCompacting || e.Type == trace.ContextCompacted {
					kinds = append(kinds, e.Type)
				}
			}
			if len(kinds) != 2 || kinds[0] != trace.ContextCompacting {
				t.Fatalf("compaction events %v", kinds)
			}
			got := srv.Received()
			if len(got) != 3 || len(got[2].Violations) > 0 || len(got[2].Results) != 0 {
				t.Fatalf("%d requests; the third: violations %v, %d results", len(got), got[len(got)-1].Violations, len(got[len(got)-1].Results))
			}
			body := string(got[2].Body)
			if !strings.Contains(body, "The work so far, compacted") || !strings.Contains(body, "step 1: fs.read") || !strings.Contains(body, "step 2: fs.write") {
				t.Fatalf("the third request does not carry the summary: %s", body)
			}
			if strings.Contains(body, "def add") { // calc.py's text, which only the full result holds
				t.Fatalf("the compacted request still carries the read's result: %s", body)
			}
		})
	}
}
