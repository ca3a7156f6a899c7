package journal

import (
	"database/sql"
	"errors"
	"fmt"
)

// ErrAnswered: the request has an answer already.
var ErrAnswered = errors.New("journal: the request is answered already")

// The answers table is the mailbox of approval answers. A person's answer is
// written here, not appended as an event: appending takes an epoch, which would
// fence the driver waiting for the answer. The driver that takes the answer (the
// waiting one, or the one resume starts) records it as ApprovalResolved, in the
// hash chain, before acting on it. An answer is written once: a second is
// refused, so what a person said cannot be replaced behind the session's back.

// PutAnswer stores the answer to request.
func (s *Store) PutAnswer(request string, answer []byte) error {
	res, err := s.db.Exec(`INSERT INTO answers VALUES (?, ?) ON CONFLICT(request) DO NOTHING`, request, answer)
	if err != nil {
		return fmt.Errorf("journal: answer %s: %w", request, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: %s", ErrAnswered, request)
	}
	return nil
}

// Answer returns the stored answer to request, or false if there is none.
func (s *Store) Answer(request string) ([]byte, bool, error) {
	var b []byte
	err := s.db.QueryRow(`SELECT answer FROM answers WHERE request = ?`, request).Scan(&b)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("journal: read answer %s: %w", request, err)
	}
	return b, true, nil
}
