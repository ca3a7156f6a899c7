package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentbox/agentbox/internal/tool"
)

// LedgerTool is "ledger.append": a tool with an effect outside the sandbox that
// can neither be checked nor safely repeated, like a deployment or a payment.
// Each call appends its entry as a line to the host file path (a test ledger)
// and fsyncs it. ModeLong calls it once; the crash campaign counts its lines to
// prove the effect happened exactly once, or that the session paused unknown.
func LedgerTool(path string) tool.Spec {
	return tool.Spec{Name: "ledger.append", Description: "Append an entry to the release ledger (an external system; not idempotent).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"entry":{"type":"string"}},"required":["entry"],"additionalProperties":false}`),
		Effect:      tool.EffectNetwork, Scope: tool.ScopeMCP,
		Handler: func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			var a struct {
				Entry string `json:"entry"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return tool.Result{}, tool.Errorf(tool.EINVAL, false, tool.ActFixArgs, "ledger.append: %v", err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				return tool.Result{}, fmt.Errorf("ledger.append: %w", err)
			}
			defer f.Close()
			if _, err := f.WriteString(a.Entry + "\n"); err != nil {
				return tool.Result{}, fmt.Errorf("ledger.append: %w", err)
			}
			if err := f.Sync(); err != nil {
				return tool.Result{}, fmt.Errorf("ledger.append: %w", err)
			}
			return tool.Result{Data: map[string]string{"appended": a.Entry}}, nil
		}}
}
