package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/internal/grant"
	"github.com/agentbox/agentbox/internal/journal"
)

// A durable session hosted for an MCP client (an MCP tool call that runs or
// resumes it) asks the person behind that client through MCP elicitation, where
// the client advertised it: the session pauses on its ask as with nobody
// waiting (Mailbox{Wait: 0}), the tool's result carries the awaiting requests
// as elicitation forms (InputRequests: the multi round-trip requests of MCP's
// 2026-07-28 revision; the SDK sends them to older clients as elicitation/create
// requests), and the client's retry brings the answers (AnswerInputs), which go
// to the journal's mailbox like those of agentbox sessions approve, before the
// session is resumed. One mechanism: the journal's pause, mailbox and resume.
// A client without elicitation gets the pause itself, to answer with agentbox
// sessions approve|deny.

// byElicitation is the Answer.By of an answer given through an elicitation.
const byElicitation = "user (MCP elicitation)"

// ElicitationSupported reports whether the MCP client of ss advertised
// elicitation in its initialize request.
func ElicitationSupported(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// InputRequests returns the approval requests the session awaits as
// elicitation forms, keyed by request id.
func InputRequests(st *journal.State) mcp.InputRequestMap {
	if len(st.Awaiting) == 0 {
		return nil
	}
	m := mcp.InputRequestMap{}
	for _, a := range st.Awaiting {
		m[a.Request.ID] = ElicitParams(a.Request)
	}
	return m
}

// ElicitParams is the form that asks a person about one request: one choice,
// "once" (allow this call), "session" (grant the scope given, or each item's
// suggestion, for the session) or "deny".
func ElicitParams(r grant.Request) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: elicitMessage(r), RequestedSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"decision": map[string]any{"type": "string", "enum": []string{"once", "session", "deny"},
				"description": "once: allow this call; session: grant for the rest of the session; deny: refuse"},
			"scope": map[string]any{"type": "string", "description": "with session: the capability to grant (default: the one suggested)"},
		},
		"required": []string{"decision"},
	}}
}

// ErrDismissed: the person dismissed an elicitation without deciding; its
// request stays awaiting (never a silent allow).
var ErrDismissed = errors.New("the elicitation was dismissed")

// AnswerInputs leaves the answers the client's retry brought in the session's
// mailbox: an accepted form's decision, a declined form as a refusal. A
// dismissed form (cancel) leaves its request awaiting and is reported
// (ErrDismissed); a response to a request not awaiting is an error.
func AnswerInputs(s *journal.Store, in mcp.InputResponseMap) error {
	var errs []error
	for id, resp := range in {
		res, ok := resp.(*mcp.ElicitResult)
		if !ok {
			errs = append(errs, fmt.Errorf("input response %s is a %T, not an elicitation result", id, resp))
			continue
		}
		allow, scope, err := decision(res)
		if err == nil {
			_, _, err = AnswerRequest(s, id, allow, scope, byElicitation)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func decision(res *mcp.ElicitResult) (allow bool, scope string, err error) {
	switch res.Action {
	case "decline":
		return false, "", nil
	case "accept":
	default:
		return false, "", fmt.Errorf("%w (%s)", ErrDismissed, res.Action)
	}
	d, _ := res.Content["decision"].(string)
	scope, _ = res.Content["scope"].(string)
	switch d {
	case "once":
		return true, "", nil
	case "session":
		if scope == "" {
			scope = grant.ScopeSuggested
		}
		return true, scope, nil
	case "deny":
		return false, "", nil
	}
	b, _ := json.Marshal(res.Content)
	return false, "", fmt.Errorf("the elicitation's answer %s has no decision once, session or deny", b)
}

// elicitMessage shows a request as Prompt does: each item's need, why, risk,
// the taint a release lets out, and what a session grant gives.
func elicitMessage(r grant.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentbox approval %s:\n", r.ID)
	for _, it := range r.Items {
		fmt.Fprintf(&b, "- %s (%s, risk %d): %s\n", it.Need, it.Tool, it.Risk.Score, it.Why)
		for _, l := range it.Taint {
			fmt.Fprintf(&b, "  holds %s data from %s (%s)\n", l.Class, l.Source, l.Rule)
		}
		if it.Once {
			b.WriteString("  asked every time: any approval allows this call only\n")
		} else {
			fmt.Fprintf(&b, "  session grants %s\n", it.Capability)
		}
	}
	return b.String()
}
