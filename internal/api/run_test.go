package api

import (
	"context"
	"testing"

	"github.com/agentbox/agentbox/client"
)

// TestRunOnce: POST /v1/run creates an environment, runs the command and
// destroys the environment after the result, whatever the exec's outcome; a
// caller needs the scopes of the create and of the exec, and Shutdown waits
// for the teardowns still under way.
func TestRunOnce(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	live := func() int {
		h.mem.mu.Lock()
		defer h.mem.mu.Unlock()
		return len(h.mem.envs)
	}
	res, err := h.client(tokA).Run(ctx, client.RunRequest{Environment: client.CreateRequest{Preset: "t"},
		Exec: client.ExecRequest{Argv: []string{"fail"}}})
	if err != nil || res.ExitCode != 3 || res.Stderr != "failed\n" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	for _, tc := range []struct {
		name, token, body string
		status            int
		code              string
	}{
		{"no scope to create", tokARead, `{"environment":{"preset":"t"},"exec":{"argv":["echo"]}}`, 403, "EPERM"},
		// The create passes, the exec is refused: the environment goes anyway.
		{"no scope to exec", tokRate, `{"environment":{"preset":"t"},"exec":{"argv":["echo"]}}`, 403, "EPERM"},
		{"a bad exec", tokA, `{"environment":{"preset":"t"},"exec":{"argv":[]}}`, 400, "EINVAL"},
		{"a bad create", tokA, `{"environment":{},"exec":{"argv":["echo"]}}`, 400, "EINVAL"},
		{"an unknown field", tokA, `{"environment":{"preset":"t"},"exec":{"argv":["echo"]},"keep":true}`, 400, "EINVAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, body := h.do("POST", "/v1/run", tc.token, []byte(tc.body))
			if st != tc.status || envelopeOf(t, body).Code != tc.code {
				t.Fatalf("status %d, want %d %s: %s", st, tc.status, tc.code, body)
			}
		})
	}
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := live(); n != 0 {
		t.Fatalf("%d environments left after the runs and Shutdown", n)
	}
	if h.mem.n != 3 {
		t.Fatalf("%d creates, want 3 (the run, the refused exec, the bad exec)", h.mem.n)
	}
}
