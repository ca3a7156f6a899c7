package trace

import "testing"

// TestProjectUnclosedStep: a step whose driver died before it closed is kept
// in the step trace, with the steers the next driver took after recovering
// (the projector used to drop it at the next TurnStarted); a steer before the
// first step goes with the first.
func TestProjectUnclosedStep(t *testing.T) {
	mem := &Memory{}
	log := NewLog(LogOptions{Session: "s-p", Sinks: []Sink{mem}})
	log.Emit(SessionCreated, 0, "", SessionInfo{Session: "s-p", Goal: "g"})
	log.Emit(SteerAnswered, 0, "", SteerAnswer{Steer: SteerRequest{ID: 1, Kind: "ask"}, Answer: "early"})
	log.Emit(TurnStarted, 1, "", TurnStart{})
	log.Emit(ToolCallProposed, 1, "call_1", Decision{Tool: "fs.read", CallID: "call_1"})
	log.Emit(RecoveryStarted, 1, "", RecoveryStart{}) // the driver died here
	log.Emit(GoalRevised, 1, "", GoalRevision{Steer: SteerRequest{ID: 2, Kind: "correct"}, Revision: 1, Epoch: 1,
		SafePoint: SafePoint{Action: SafeBoundary}})
	log.Emit(TurnStarted, 2, "", TurnStart{})
	log.Emit(TurnCompleted, 2, "", TurnEnd{})
	log.Emit(SessionEnded, 0, "", SessionEnd{StopReason: "done"})
	steps, err := Project(mem.Events())
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].Step != 1 || len(steps[0].Steers) != 2 || steps[0].Steers[0].Answer != "early" ||
		steps[0].Steers[1].SafePoint != SafeBoundary || steps[1].Step != 2 {
		t.Fatalf("steps %+v", steps)
	}
}
