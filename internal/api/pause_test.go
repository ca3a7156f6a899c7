package api

import (
	"context"
	"errors"
	"strings"
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
	p, err := a.Pause(ctx, e.ID, client.PauseRequest{})
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

// TestPauseToDisk: to_disk reaches the service and comes back as
// paused_to_disk; a pause with no body is a plain one, and a body with a field
// the request does not have is refused (400), not taken for a plain pause.
func TestPauseToDisk(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	e, err := a.Create(ctx, client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Pause(ctx, e.ID, client.PauseRequest{ToDisk: true})
	if err != nil || p.State != "paused" || !p.PausedToDisk {
		t.Fatalf("Pause to disk = %+v, %v", p, err)
	}
	path := "/v1/environments/" + e.ID + "/pause"
	if code, _, body := h.do("POST", path, tokA, nil); code != 200 || strings.Contains(string(body), "paused_to_disk") {
		t.Errorf("a pause with no body = %d %s, want 200, not to disk", code, body)
	}
	if code, _, body := h.do("POST", path, tokA, []byte(`{"to_dsk": true}`)); code != 400 {
		t.Errorf("a pause with an unknown field = %d %s, want 400", code, body)
	}
}
