package grant

import "fmt"

// Steer is the kind of a user's message while a session runs (seed 004).
type Steer string

const (
	Supplement Steer = "supplement" // adds an acceptance criterion: grants stay
	Correct    Steer = "correct"    // says the direction is wrong: grants go
	Replace    Steer = "replace"    // stops the task for another: grants go
	Ask        Steer = "ask"        // asks about progress: the goal does not change
)

// ParseSteer checks a steer's kind as a person typed it.
func ParseSteer(s string) (Steer, error) {
	switch k := Steer(s); k {
	case Supplement, Correct, Replace, Ask:
		return k, nil
	}
	return "", fmt.Errorf("unknown steer kind %q (want supplement, correct, replace or ask)", s)
}

// Goal is a session's goal revision: Revision counts the steers that changed
// the goal, Epoch is the revision of the last correction or replacement.
type Goal struct {
	Revision int `json:"goal_revision"`
	Epoch    int `json:"epoch"`
}

// Steer returns the goal after a steer of kind k; an ask leaves it as it is.
func (g Goal) Steer(k Steer) (Goal, error) {
	switch k {
	case Ask:
	case Supplement:
		g.Revision++
	case Correct, Replace:
		g.Revision++
		g.Epoch = g.Revision
	default:
		return g, fmt.Errorf("unknown steer %q (want supplement, correct, replace or ask)", k)
	}
	return g, nil
}

// Fits reports whether a grant given, or a call made, under revision r still
// holds: no correction or replacement came after it.
func (g Goal) Fits(r int) bool { return r >= g.Epoch }
