package policy

import (
	"testing"

	"github.com/agentbox/agentbox/internal/taint"
)

// BenchmarkDecide is the cost the policy adds to a tool call: a shell line of
// three programs in a tainted session with grants, under the built-in policy.
func BenchmarkDecide(b *testing.B) {
	a := Action{Tool: "exec.run", Effect: Exec, Network: true,
		Command: sh("cd src && timeout 60 go test ./... 2>&1 | tee out.txt && curl -s https://registry.npmjs.org/x")}
	ctx := Context{Call: "c1", Sandbox: SandboxNamespace, Overlay: true, Allowlist: allow(b, "preset:npm"),
		Grants: grants{{cap: "exec:go test **"}, {cap: "network:*"}}, Taint: []taint.Label{envLabel}}
	p := Default()
	b.ReportAllocs()
	for b.Loop() {
		if v := p.Decide(a, ctx); v.Decision == "" {
			b.Fatal("no decision")
		}
	}
}
