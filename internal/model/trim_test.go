package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// session builds an agent-shaped conversation: the task, then rounds of an
// assistant message with calls and a tool message with one result of size bytes
// per call.
func session(rounds, calls, size int) Request {
	req := Request{Model: "m", System: "You fix bugs.", Messages: []Message{{Role: RoleUser, Text: "Fix calc.add."}},
		Tools: []ToolDef{{Name: "fs.read"}}}
	for r := 0; r < rounds; r++ {
		am := Message{Role: RoleAssistant, Text: fmt.Sprintf("round %d", r)}
		tm := Message{Role: RoleTool}
		for c := 0; c < calls; c++ {
			id := fmt.Sprintf("call_%d_%d", r, c)
			am.ToolCalls = append(am.ToolCalls, ToolCall{ID: id, Name: "fs.read", Args: json.RawMessage(`{"path":"a"}`)})
			tm.ToolResults = append(tm.ToolResults, ToolResult{CallID: id, Name: "fs.read", Content: strings.Repeat("x", size)})
		}
		req.Messages = append(req.Messages, am, tm)
	}
	return req
}

func TestTrimToFit(t *testing.T) {
	t.Run("fits already", func(t *testing.T) {
		req := session(2, 1, 100)
		got, changed := TrimToFit(req, EstimateTokens(req))
		if changed || !cmp.Equal(got, req) {
			t.Errorf("changed a request that fits")
		}
	})
	t.Run("old tool output goes first, the last exchange stays", func(t *testing.T) {
		req := session(4, 2, 4000)
		budget := EstimateTokens(req) - 2900 // 11.6 KB to shed: three results of 4000 bytes
		got, changed := TrimToFit(req, budget)
		if !changed || EstimateTokens(got) > budget {
			t.Fatalf("changed=%v, estimate %d > budget %d", changed, EstimateTokens(got), budget)
		}
		if len(got.Messages) != len(req.Messages) {
			t.Errorf("dropped turns when stubbing results was enough")
		}
		stubbed := 0
		for i, m := range got.Messages {
			for j, r := range m.ToolResults {
				if strings.HasPrefix(r.Content, "[output elided") {
					stubbed++
					if !r.Provenance.Truncated {
						t.Errorf("stubbed result not marked truncated")
					}
					if i >= 7 {
						t.Errorf("message %d result %d of the last exchange was stubbed", i, j)
					}
				}
			}
		}
		if stubbed != 3 {
			t.Errorf("%d results stubbed, want the 3 oldest", stubbed)
		}
		// The input is untouched.
		if req.Messages[2].ToolResults[0].Content != strings.Repeat("x", 4000) {
			t.Errorf("TrimToFit modified its input")
		}
	})
	t.Run("middle turns go next, with a note", func(t *testing.T) {
		req := session(30, 1, 10)
		got, changed := TrimToFit(req, EstimateTokens(req)/2)
		if !changed || EstimateTokens(got) > EstimateTokens(req)/2 {
			t.Fatalf("changed=%v, estimate %d", changed, EstimateTokens(got))
		}
		if got.Messages[0].Text != "Fix calc.add." {
			t.Errorf("first message %+v, want the task kept", got.Messages[0])
		}
		if !strings.Contains(got.Messages[1].Text, "earlier messages were removed") {
			t.Errorf("no note where turns were removed: %+v", got.Messages[1])
		}
		last := got.Messages[len(got.Messages)-2:]
		if !cmp.Equal(last, req.Messages[len(req.Messages)-2:]) {
			t.Errorf("the last exchange changed")
		}
		if err := validate(got); err != nil {
			t.Errorf("trimmed conversation is invalid: %v", err)
		}
	})
	t.Run("the last exchange is cut to its head when nothing else is left", func(t *testing.T) {
		req := session(1, 1, 100000)
		got, changed := TrimToFit(req, 5000)
		r := got.Messages[2].ToolResults[0]
		if !changed || len(r.Content) > keepHead+100 || !strings.HasPrefix(r.Content, strings.Repeat("x", keepHead)) || !r.Provenance.Truncated {
			t.Errorf("changed=%v, result of %d bytes: %.80q", changed, len(r.Content), r.Content)
		}
	})
	t.Run("the latest user message is kept even mid-conversation", func(t *testing.T) {
		req := session(10, 1, 1000)
		steer := Message{Role: RoleUser, Text: "Stop. Only fix the API."}
		req.Messages = append(req.Messages[:11:11], append([]Message{steer}, req.Messages[11:]...)...)
		got, _ := TrimToFit(req, 800)
		found := false
		for _, m := range got.Messages {
			found = found || m.Text == steer.Text
		}
		if !found {
			t.Errorf("latest user message dropped")
		}
		if err := validate(got); err != nil {
			t.Errorf("invalid: %v", err)
		}
	})
}

// TestTrimToFitProperties checks, for random agent conversations and budgets, that
// the result is a valid conversation that keeps the system prompt, the latest
// user message and the last exchange's calls, and fits unless nothing removable is
// left.
func TestTrimToFitProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		req := Request{Model: "m", System: "sys", Messages: []Message{{Role: RoleUser, Text: "task"}}}
		rounds := rapid.IntRange(0, 12).Draw(t, "rounds")
		for r := 0; r < rounds; r++ {
			if rapid.IntRange(0, 5).Draw(t, "steer") == 0 {
				req.Messages = append(req.Messages, Message{Role: RoleUser, Text: fmt.Sprintf("steer %d", r)})
			}
			am := Message{Role: RoleAssistant, Text: strings.Repeat("t", rapid.IntRange(0, 300).Draw(t, "text"))}
			n := rapid.IntRange(0, 3).Draw(t, "calls")
			if n == 0 && am.Text == "" {
				am.Text = "done"
			}
			tm := Message{Role: RoleTool}
			for c := 0; c < n; c++ {
				id := fmt.Sprintf("c%d_%d", r, c)
				am.ToolCalls = append(am.ToolCalls, ToolCall{ID: id, Name: "x", Args: json.RawMessage(`{}`)})
				tm.ToolResults = append(tm.ToolResults, ToolResult{CallID: id, Name: "x",
					Content: strings.Repeat("r", rapid.IntRange(0, 20000).Draw(t, "size"))})
			}
			req.Messages = append(req.Messages, am)
			if n > 0 {
				req.Messages = append(req.Messages, tm)
			}
		}
		before, _ := json.Marshal(req)
		budget := rapid.IntRange(1, EstimateTokens(req)+10).Draw(t, "budget")
		got, changed := TrimToFit(req, budget)
		after, _ := json.Marshal(req)
		if string(before) != string(after) {
			t.Fatalf("input modified")
		}
		if err := validate(got); err != nil {
			t.Fatalf("invalid result: %v", err)
		}
		if got.System != req.System {
			t.Fatalf("system prompt changed")
		}
		lastUser := ""
		for _, m := range req.Messages {
			if m.Role == RoleUser {
				lastUser = m.Text
			}
		}
		kept := false
		for _, m := range got.Messages {
			kept = kept || (m.Role == RoleUser && m.Text == lastUser)
		}
		if !kept {
			t.Fatalf("latest user message %q dropped", lastUser)
		}
		if l, g := req.Messages[len(req.Messages)-1], got.Messages[len(got.Messages)-1]; l.Role != g.Role || !cmp.Equal(l.ToolCalls, g.ToolCalls) ||
			len(l.ToolResults) != len(g.ToolResults) {
			t.Fatalf("last message changed shape")
		}
		if EstimateTokens(req) <= budget && changed {
			t.Fatalf("changed a request that fit")
		}
		if EstimateTokens(got) > budget {
			// Allowed only when nothing removable is left: every kept message is
			// pinned or the note, and no result exceeds the kept head.
			for _, m := range got.Messages {
				for _, r := range m.ToolResults {
					if len(r.Content) > keepHead+100 {
						t.Fatalf("over budget (%d > %d) with a %d-byte result left", EstimateTokens(got), budget, len(r.Content))
					}
				}
			}
		}
	})
}

func TestTrimOnOverflow(t *testing.T) {
	for _, tc := range []struct {
		name      string
		steps     []step
		wantCalls int
		wantErr   error
	}{
		{"trims and succeeds", []step{{status: 400, file: "openai/error_context_openai.json"}, {file: "openai/text.json"}}, 2, nil},
		{"retries exactly once", []step{{status: 400, file: "openai/error_context_vllm.json"}, {status: 400, file: "openai/error_context_vllm.json"}}, 2, ErrContextOverflow},
		{"other errors pass through", []step{{status: 500, file: "openai/error_500.json"}}, 1, ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFixtureServer(t, tc.steps...)
			req := session(8, 2, 3000)
			resp, err := NewTrimOnOverflow(newTestOpenAI(t, srv.srv.URL, false, nil)).Complete(context.Background(), req)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			reqs := srv.requests()
			if len(reqs) != tc.wantCalls {
				t.Fatalf("%d requests, want %d", len(reqs), tc.wantCalls)
			}
			if tc.wantCalls == 2 {
				// The OpenAI fixture says 130532 > 128000: cut to 0.9·128000/130532.
				if len(reqs[1].body) > len(reqs[0].body)*9/10 {
					t.Errorf("second request %d bytes, first %d: not trimmed enough", len(reqs[1].body), len(reqs[0].body))
				}
				if tc.wantErr == nil && len(resp.Trimmed) == 0 {
					t.Errorf("Response.Trimmed not set")
				}
			}
		})
	}
}

// overflowBudget uses the provider's numbers when it gives them.
func TestOverflowBudget(t *testing.T) {
	req := session(4, 1, 4000)
	est := EstimateTokens(req)
	withNumbers := &APIError{kind: ErrContextOverflow, ContextLimit: 100, RequestedTokens: 200}
	if got, want := overflowBudget(req, withNumbers), int(float64(est)*0.45); got != want {
		t.Errorf("budget with numbers %d, want %d", got, want)
	}
	if got, want := overflowBudget(req, &APIError{kind: ErrContextOverflow}), int(float64(est)*0.75); got != want {
		t.Errorf("budget without numbers %d, want %d", got, want)
	}
}
