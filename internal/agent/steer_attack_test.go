package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/trace"
)

// TestSteerBounds (attack: steers that grow a session without end). One
// oversized message is refused; so are supplements and corrections, taken or
// still waiting in the inbox, that would together make the goal (recorded
// whole in every GoalRevised, sent in every model request) pass
// MaxSteeredGoal; an ask changes no goal and a replacement starts it again, so
// both are still taken. Nothing refused reaches the inbox.
func TestSteerBounds(t *testing.T) {
	s, err := journal.Open(t.TempDir(), journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	log := trace.NewLog(trace.LogOptions{Session: "s-bounds", Journal: d})
	log.Emit(trace.SessionCreated, 0, "", trace.SessionInfo{Session: "s-bounds", Goal: "fix the bug"})
	if err := log.Halted(); err != nil {
		t.Fatal(err)
	}
	if _, err := Steer(s, "supplement", strings.Repeat("x", MaxSteerMessage+1), ""); err == nil || !strings.Contains(err.Error(), "shorten") {
		t.Errorf("an oversized steer = %v, want refused", err)
	}
	part := strings.Repeat("y", MaxSteerMessage)
	left := 0
	for i := 0; ; i++ {
		kind := []string{"supplement", "correct"}[i%2]
		_, err := Steer(s, kind, part, "")
		if err != nil {
			if !strings.Contains(err.Error(), "replace") {
				t.Fatalf("steer %d refused with %v, want a message naming replace", i, err)
			}
			break
		}
		if left++; left > MaxSteeredGoal/MaxSteerMessage {
			t.Fatalf("%d steers of %d bytes taken: the goal passes %d bytes", left, MaxSteerMessage, MaxSteeredGoal)
		}
	}
	if left == 0 {
		t.Fatal("no supplement was taken: the test would prove nothing")
	}
	for _, kind := range []string{"ask", "replace"} {
		if _, err := Steer(s, kind, part, ""); err != nil {
			t.Errorf("%s after the goal's bound = %v, want taken", kind, err)
		}
	}
	rs, err := s.Steers(0)
	if err != nil || len(rs) != left+2 {
		t.Fatalf("the inbox holds %d steers (%v), want %d", len(rs), err, left+2)
	}
	for _, r := range rs {
		if len(r.Message) > MaxSteerMessage {
			t.Errorf("steer %d of %d bytes in the inbox", r.ID, len(r.Message))
		}
	}
}
