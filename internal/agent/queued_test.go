package agent

import (
	"context"
	"testing"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/policy"
	"github.com/agentbox/agentbox/internal/trace"
)

// queuedSeq is a Sequence that shows its remaining calls, as a model reply's
// further tool calls are shown (ModelPolicy.Queued).
type queuedSeq struct{ Sequence }

func (q *queuedSeq) Queued() []Decision { return q.Decisions[q.next:] }

// askingPerson approves every request with its suggestions and counts them.
type askingPerson struct{ reqs []grant.Request }

func (p *askingPerson) Approve(_ context.Context, r grant.Request) (grant.Answer, error) {
	p.reqs = append(p.reqs, r)
	return grant.AllowAll(r, "user"), nil
}

// TestQueuedAsksTogether: low-risk asks of calls in a row (a model reply's
// several tool calls) are one question: two writes a policy asks about, in
// different directories, are approved in one request of two items, and both
// run; trace stats counts one interruption. A high-risk queued call is not
// gathered, and a policy that shows nothing queued is asked call by call.
func TestQueuedAsksTogether(t *testing.T) {
	pol, err := policy.Parse([]byte("version: 1\nrules:\n  - name: ask-a\n    effect: [write]\n    paths: [\"a/**\", \"b/**\"]\n    decision: ask\n" +
		"  - name: ask-c\n    effect: [write]\n    paths: [\"c/**\"]\n    decision: ask\n    every_time: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		queued bool
		second string
		reqs   int
	}{{"queued", true, "b/y.py", 1}, {"not-queued", false, "b/y.py", 2}, {"every-time", true, "c/z.py", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			person := &askingPerson{}
			g := &Permissions{Policy: pol, Grants: grant.NewSet(grant.Options{}), Approver: person}
			r, w := guarded(t, g)
			ds := []Decision{writeCall("a/x.py", "1"), writeCall(tc.second, "2")}
			ds[0].CallID, ds[1].CallID = "c1", "c2"
			var p Policy = &Sequence{Decisions: ds}
			if tc.queued {
				p = &queuedSeq{Sequence{Decisions: ds}}
			}
			res, evs, steps := session(t, Options{Policy: p, Tools: r, Permissions: g})
			if len(person.reqs) != tc.reqs || w.calls["fs.write"] != 2 || res.StopReason != StopPolicy {
				t.Fatalf("%d requests, %d writes (%s: %s); want %d, 2", len(person.reqs), w.calls["fs.write"], res.StopReason, res.Detail, tc.reqs)
			}
			if tc.reqs == 1 && len(person.reqs[0].Items) != 2 {
				t.Fatalf("the request: %+v", person.reqs[0])
			}
			if st := trace.ComputeStats(steps); st.Interruptions != tc.reqs || len(ofType(evs, trace.ApprovalRequested)) != tc.reqs {
				t.Fatalf("stats: %+v", st)
			}
		})
	}
}
