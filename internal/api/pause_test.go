package api

import (
	"context"
	"errors"
	"testing"

	"github.com/agentbox/agentbox/client"
)

// TestPauseResume: pause and resume answer the environment in its new state, an
// exec in a paused environment is 409 EPAUSED naming the way out, and resume
// makes it run again.
func TestPauseResume(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	e, err := a.Create(ctx, client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Pause(ctx, e.ID)
	if err != nil || p.State != "paused" {
		t.Fatalf("Pause = %+v, %v", p, err)
	}
	_, err = a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"echo", "hi"}})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != client.CodePaused || ce.Status != 409 || ce.SuggestedAction == "" {
		t.Fatalf("Exec while paused = %#v, want 409 %s with an action", err, client.CodePaused)
	}
	r, err := a.Resume(ctx, e.ID)
	if err != nil || r.State != "running" {
		t.Fatalf("Resume = %+v, %v", r, err)
	}
	if res, err := a.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"echo", "hi"}}); err != nil || res.Stdout != "hi\n" {
		t.Fatalf("Exec after Resume = %+v, %v", res, err)
	}
}
