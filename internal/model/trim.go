package model

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// EstimateTokens guesses the prompt size of req at one token per four bytes of what
// the adapters send (system prompt and notice, tool definitions, texts, arguments,
// tool results with their wrapper), plus a little per message. It is a heuristic
// for sizing a cut, not a tokenizer: code and non-English text can take more.
func EstimateTokens(req Request) int {
	return (estimateBytes(req) + 3) / 4
}

func estimateBytes(req Request) int {
	n := len(systemPrompt(req))
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(schemaOf(t)) + 32
	}
	for _, m := range req.Messages {
		n += messageBytes(m)
	}
	return n
}

func messageBytes(m Message) int {
	n := 16 + len(m.Text)
	for _, c := range m.ToolCalls {
		n += 32 + len(c.ID) + len(c.Name) + len(wireArgs(c))
	}
	for _, r := range m.ToolResults {
		n += resultBytes(r)
	}
	return n
}

func resultBytes(r ToolResult) int {
	return 112 + len(r.CallID) + len(r.Name) + len(r.Provenance.Source) + len(r.Content)
}

// keepHead is how much of a tool result the last phase of TrimToFit keeps.
const keepHead = 4096

// unit is a run of messages that must stay or go together: a user or system
// message alone, or an assistant message with the tool messages answering it.
type unit struct{ start, end int }

func splitUnits(msgs []Message) []unit {
	var us []unit
	for i := 0; i < len(msgs); {
		j := i + 1
		if msgs[i].Role == RoleAssistant {
			for j < len(msgs) && msgs[j].Role == RoleTool {
				j++
			}
		}
		us = append(us, unit{i, j})
		i = j
	}
	return us
}

// TrimToFit shortens the conversation until EstimateTokens is at most budget,
// without breaking it: every kept tool call keeps its result. It keeps the system
// prompt, system messages, the latest user message and the last exchange (the most
// recent assistant message and its results), and removes, in this order until the
// estimate fits:
//
//  1. the content of the oldest tool results, replaced by a one-line stub;
//  2. whole middle turns, oldest first, leaving one user note that says how many
//     messages were removed;
//  3. all but the first 4 KiB of the largest results of the last exchange.
//
// It returns a new Request (req is not modified) and whether anything changed.
func TrimToFit(req Request, budget int) (Request, bool) {
	limit := budget * 4
	total := estimateBytes(req)
	if total <= limit {
		return req, false
	}
	msgs := make([]Message, len(req.Messages))
	copy(msgs, req.Messages)
	for i := range msgs {
		msgs[i].ToolResults = append([]ToolResult(nil), msgs[i].ToolResults...)
	}
	units := splitUnits(msgs)
	pinned := make([]bool, len(units))
	for i, u := range units {
		if msgs[u.start].Role == RoleSystem {
			pinned[i] = true
		}
	}
	for i := len(units) - 1; i >= 0; i-- {
		if msgs[units[i].start].Role == RoleUser {
			pinned[i] = true
			break
		}
	}
	if len(units) > 0 {
		pinned[len(units)-1] = true
	}
	changed := false

	// 1. Stub out old tool output.
	for ui, u := range units {
		for mi := u.start; mi < u.end && !pinned[ui] && total > limit; mi++ {
			for ri := range msgs[mi].ToolResults {
				r := &msgs[mi].ToolResults[ri]
				stub := fmt.Sprintf("[output elided to fit the context window: %d bytes]", len(r.Content))
				if len(r.Content) <= len(stub) {
					continue
				}
				total -= len(r.Content) - len(stub)
				r.Content, r.Provenance.Truncated = stub, true
				changed = true
				if total <= limit {
					break
				}
			}
		}
	}

	// 2. Drop middle turns.
	dropped := make([]bool, len(units))
	removed, first := 0, -1
	const noteBytes = 16 + 80
	fits := func() bool {
		if removed > 0 {
			return total+noteBytes <= limit
		}
		return total <= limit
	}
	for ui, u := range units {
		if fits() {
			break
		}
		if pinned[ui] {
			continue
		}
		for mi := u.start; mi < u.end; mi++ {
			total -= messageBytes(msgs[mi])
		}
		dropped[ui], removed, changed = true, removed+u.end-u.start, true
		if first < 0 {
			first = ui
		}
	}
	var out []Message
	for ui, u := range units {
		if ui == first {
			out = append(out, Message{Role: RoleUser,
				Text: fmt.Sprintf("[%d earlier messages were removed to fit the context window]", removed)})
			total += noteBytes
		}
		if !dropped[ui] {
			out = append(out, msgs[u.start:u.end]...)
		}
	}

	// 3. Cut the largest results of what is left, keeping their head.
	if total > limit {
		type ref struct{ m, r int }
		var refs []ref
		for mi := range out {
			for ri := range out[mi].ToolResults {
				if len(out[mi].ToolResults[ri].Content) > keepHead {
					refs = append(refs, ref{mi, ri})
				}
			}
		}
		sort.SliceStable(refs, func(a, b int) bool {
			return len(out[refs[a].m].ToolResults[refs[a].r].Content) > len(out[refs[b].m].ToolResults[refs[b].r].Content)
		})
		for _, rf := range refs {
			if total <= limit {
				break
			}
			r := &out[rf.m].ToolResults[rf.r]
			tail := fmt.Sprintf("\n[cut to fit the context window: %d of %d bytes removed]", len(r.Content)-keepHead, len(r.Content))
			cutAt := keepHead
			for cutAt > 0 && r.Content[cutAt]&0xC0 == 0x80 {
				cutAt--
			}
			total -= len(r.Content) - cutAt - len(tail)
			r.Content, r.Provenance.Truncated = r.Content[:cutAt]+tail, true
			changed = true
		}
	}
	req.Messages = out
	return req, changed
}

// TrimOnOverflow answers ErrContextOverflow by trimming the conversation with
// TrimToFit and trying exactly once more. The cut is sized from the overflow
// error's numbers when the provider states them (limit / requested, with a 10%
// margin), else to three quarters of the estimate. The retried Response carries
// the messages sent in Trimmed. Put it outside Retry:
//
//	NewTrimOnOverflow(NewRetry(NewBreaker(adapter, …), …))
type TrimOnOverflow struct {
	next Client
}

// NewTrimOnOverflow wraps next.
func NewTrimOnOverflow(next Client) *TrimOnOverflow { return &TrimOnOverflow{next: next} }

// Complete calls next, and on a context overflow trims and calls it once more.
func (t *TrimOnOverflow) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := t.next.Complete(ctx, req)
	if !errors.Is(err, ErrContextOverflow) {
		return resp, err
	}
	trimmed, changed := TrimToFit(req, overflowBudget(req, err))
	if !changed {
		return resp, err
	}
	resp, err = t.next.Complete(ctx, trimmed)
	resp.Trimmed = trimmed.Messages
	return resp, err
}

func overflowBudget(req Request, err error) int {
	ratio := 0.75
	var ae *APIError
	if errors.As(err, &ae) && ae.ContextLimit > 0 && ae.RequestedTokens > ae.ContextLimit {
		ratio = 0.9 * float64(ae.ContextLimit) / float64(ae.RequestedTokens)
	}
	return int(float64(EstimateTokens(req)) * ratio)
}
