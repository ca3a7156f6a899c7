package grant

import "fmt"

// Steer is the kind of a user's message while a session runs (seed 004).
type Steer string

const (
	Supplement Steer = "supplement" // adds an acceptance criterion: grants stay
	Query      Steer = "query"      // asks about progress: grants stay
	Correct    Steer = "correct"    // says the direction is wrong: grants go
	Replace    Steer = "replace"    // stops the task for another: grants go
)

// Goal is a session's goal revision: Revision counts every steer, Epoch is the
// revision of the last correction or replacement.
type Goal struct {
	Revision int `json:"goal_revision"`
	Epoch    int `json:"epoch"`
}

// Steer returns the goal after a steer of kind k.
func (g Goal) Steer(k Steer) (Goal, error) {
	switch k {
	case Supplement, Query:
		g.Revision++
	case Correct, Replace:
		g.Revision++
		g.Epoch = g.Revision
	default:
		return g, fmt.Errorf("unknown steer %q (want supplement, query, correct or replace)", k)
	}
	return g, nil
}

// Fits reports whether a grant given under revision r still holds: no correction
// or replacement came after it.
func (g Goal) Fits(r int) bool { return r >= g.Epoch }
