// Package journal keeps a session's events in a durable store, the session's
// source of truth: each event is committed before anything acts on it (intent
// before effect), numbered by a monotonic seq and hash-chained (package trace).
// The store is a SQLite database in WAL mode (modernc.org/sqlite, no cgo) in the
// session's directory.
//
// SQLite rather than bbolt: several processes may open one session (a driver
// that was presumed dead and the one resuming it), and fencing must be a check
// inside the append's own transaction, not a file lock a hung process holds
// forever. Each driver takes the next epoch (Store.Acquire); an append whose
// driver's epoch is no longer the session's fails with ErrFenced, so a stale
// driver can never commit. WAL frames are checksummed: a torn last write is
// discarded when the database is opened.
//
// State is the fold of the events (Fold), the projection recovery starts from;
// a driver snapshots it every SnapshotEvery events with the seq it covers (the
// watermark), so Load replays only the tail. Folds are idempotent: an event at
// or below the state's seq is ignored.
//
// It deliberately does not decide what a recovered call's outcome is (package
// agent reconciles), run tools, or serve events to clients.
package journal
