package agent

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/trace"
)

// TestPromptApproves: a person's answers at the prompt decide: y grants the
// write (the handler runs once, and the next write under the same directory is
// not asked again), n refuses (EPERM, the handler does not run), and the end of
// input stops the session.
func TestPromptApproves(t *testing.T) {
	write := func(p string) Decision {
		b, _ := json.Marshal(map[string]string{"path": p, "content": "x"})
		return Decision{Tool: "fs.write", Args: b}
	}
	for _, tc := range []struct {
		input  string
		writes int
		stop   StopReason
		asked  int
	}{
		{"maybe\ny\n", 2, StopPolicy, 1},
		{"n\n", 0, StopPolicy, 2},
		{"", 0, StopPolicy, 1},
	} {
		var out bytes.Buffer
		g := &Permissions{Sandbox: policy.SandboxNamespace, Overlay: true, Approver: &Prompt{In: strings.NewReader(tc.input), Out: &out}}
		r, w := guarded(t, g)
		res, evs, _ := session(t, Options{Policy: &Sequence{Decisions: []Decision{write(".git/hooks/pre-commit"), write(".git/hooks/post-commit")}},
			Tools: r, Permissions: g})
		if w.calls["fs.write"] != tc.writes || res.StopReason != tc.stop || len(ofType(evs, trace.ApprovalRequested)) != tc.asked {
			t.Errorf("%q: %d writes, %s (%s), %d asks\n%s", tc.input, w.calls["fs.write"], res.StopReason, res.Detail,
				len(ofType(evs, trace.ApprovalRequested)), out.String())
		}
		if !strings.Contains(out.String(), "write:.git/hooks/pre-commit") || !strings.Contains(out.String(), "grants write:.git/hooks/**") {
			t.Errorf("the prompt does not show the need and the grant:\n%s", out.String())
		}
	}
}
