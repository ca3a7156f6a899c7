package journal

import (
	"fmt"
	"time"

	"github.com/agentbox/agentbox/internal/trace"
)

// The steers table is a session's steering inbox: a person's messages to the
// running session (agentbox sessions steer, or a coordinator's API), written
// by another process. Like the answers mailbox it is not the event log: an
// append takes an epoch, which would fence the running driver. The driver
// takes each entry once, in id order, at a safe point, and records it
// (GoalRevised or SteerAnswered, with the entry's id) before acting on it;
// State.Steered is the last id taken, so a resumed driver takes the rest.

// PutSteer appends r to the inbox and returns it with its id and time.
func (s *Store) PutSteer(r trace.SteerRequest) (trace.SteerRequest, error) {
	if r.At.IsZero() {
		r.At = time.Now().UTC()
	}
	err := s.db.QueryRow(`INSERT INTO steers (kind, message, by, at) VALUES (?, ?, ?, ?) RETURNING id`,
		r.Kind, r.Message, r.By, r.At.Format(time.RFC3339Nano)).Scan(&r.ID)
	if err != nil {
		return r, fmt.Errorf("journal: steer: %w", err)
	}
	return r, nil
}

// Steers returns the inbox's entries after id, oldest first.
func (s *Store) Steers(after int64) ([]trace.SteerRequest, error) {
	rows, err := s.db.Query(`SELECT id, kind, message, by, at FROM steers WHERE id > ? ORDER BY id`, after)
	if err != nil {
		return nil, fmt.Errorf("journal: read steers: %w", err)
	}
	defer rows.Close()
	var out []trace.SteerRequest
	for rows.Next() {
		var r trace.SteerRequest
		var at string
		if err := rows.Scan(&r.ID, &r.Kind, &r.Message, &r.By, &at); err != nil {
			return nil, err
		}
		r.At, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, r)
	}
	return out, rows.Err()
}
