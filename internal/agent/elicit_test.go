package agent

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/trace"
)

// hostServer serves an MCP tool, run, that runs or resumes a durable session of
// two asked writes (.git/config) for its client, as a server hosting sessions
// would: it leaves the answers a retry brings in the mailbox, resumes, and on a
// pause returns the awaiting requests as elicitations when the client supports
// them, else says how to answer with agentbox sessions approve.
func hostServer(t *testing.T, dir string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentbox-test", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "run", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s, err := journal.Open(dir, journal.Options{NoSync: true})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		text := func(s string) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
		}
		if err := AnswerInputs(s, req.Params.InputResponses); errors.Is(err, ErrDismissed) {
			return text("dismissed: the session stays paused; answer with agentbox sessions approve|deny"), nil
		} else if err != nil {
			return nil, err
		}
		perms, err := NewPermissions(PermissionConfig{})
		if err != nil {
			return nil, err
		}
		perms.Approver = &Mailbox{Store: s}
		r, w := gatedWork(t, perms, filepath.Join(dir, "ledger"))
		res, _, err := RunDurable(ctx, s, w, Options{Goal: "g", Policy: steps{writeCall(".git/config", "a"), writeCall(".git/config", "b")},
			Tools: r, Permissions: perms}, trace.LogOptions{Session: "s-hosted", Clock: fixedClock()}, nil)
		if err != nil {
			return nil, err
		}
		st, err := s.Load()
		if err != nil {
			return nil, err
		}
		if res.StopReason == StopPaused && len(st.Awaiting) > 0 {
			if ElicitationSupported(req.Session) {
				return &mcp.CallToolResult{InputRequests: InputRequests(st)}, nil
			}
			return text(res.Detail), nil
		}
		return text(string(res.StopReason) + ": " + res.Detail), nil
	})
	return srv
}

// TestElicitation: a session hosted for an MCP client that supports
// elicitation asks the person through it, the request's need and rule in the
// form's message: "once" allows one call (the second write is asked again),
// "session" grants the suggestion (one question for both writes) or the scope
// given, "deny" and a declined form refuse, a dismissed one leaves the session
// paused with nothing written. Each answer is recorded as ApprovalResolved by
// the elicitation. A client without elicitation is never sent one: the
// session pauses for agentbox sessions approve.
func TestElicitation(t *testing.T) {
	answer := func(action string, content map[string]any) func() (*mcp.ElicitResult, error) {
		return func() (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: action, Content: content}, nil }
	}
	for _, tc := range []struct {
		name   string
		answer func() (*mcp.ElicitResult, error) // nil: no elicitation capability
		writes string                            // .git/config's content at the end
		asked  int
		reply  string
	}{
		{"once", answer("accept", map[string]any{"decision": "once"}), "b", 2, "policy_stop"},
		{"session", answer("accept", map[string]any{"decision": "session"}), "b", 1, "policy_stop"},
		{"session-scope", answer("accept", map[string]any{"decision": "session", "scope": "write:.git/config"}), "b", 1, "policy_stop"},
		{"bad-scope", answer("accept", map[string]any{"decision": "session", "scope": "write:src/**"}), "", 1, "does not cover"},
		{"deny", answer("accept", map[string]any{"decision": "deny"}), "", 2, "policy_stop"},
		{"decline", answer("decline", nil), "", 2, "policy_stop"},
		{"cancel", answer("cancel", nil), "", 1, "dismissed"},
		{"no-elicitation", nil, "", 0, "sessions approve|deny DIR req_1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			srv := hostServer(t, dir)
			var mu sync.Mutex
			var asked []string
			opts := &mcp.ClientOptions{}
			if tc.answer != nil {
				opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					return tc.answer()
				}
			}
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts).Connect(context.Background(), ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{}})
			reply := ""
			if err != nil {
				reply = err.Error()
			} else if len(res.Content) > 0 {
				reply = res.Content[0].(*mcp.TextContent).Text
			}
			if len(asked) != tc.asked || !strings.Contains(reply, tc.reply) {
				t.Fatalf("%d elicitations, reply %q; want %d, %q", len(asked), reply, tc.asked, tc.reply)
			}
			if len(asked) > 0 && (!strings.Contains(asked[0], "write:.git/config") || !strings.Contains(asked[0], "write-git-internals")) {
				t.Fatalf("the elicitation's message: %q", asked[0])
			}
			var by []string
			for _, e := range loadEvents(t, dir) {
				if e.Type == trace.ApprovalResolved {
					by = append(by, string(e.Data))
				}
			}
			st2 := loadState(t, dir)
			wrote := st2.Workspace.Diff
			if tc.writes != "" && !strings.Contains(string(wrote), `".git/config":"`+tc.writes+`"`) || tc.writes == "" && strings.Contains(string(wrote), ".git/config") {
				t.Fatalf(".git/config: the workspace is %s", wrote)
			}
			for _, b := range by {
				if !strings.Contains(b, byElicitation) {
					t.Fatalf("ApprovalResolved not by the elicitation: %s", b)
				}
			}
			if (tc.name == "cancel" || tc.name == "no-elicitation") && len(st2.Awaiting) != 1 {
				t.Fatalf("awaiting %+v; want req_1 still", st2.Awaiting)
			}
		})
	}
}
