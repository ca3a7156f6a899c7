package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/agentbox/agentbox/internal/chain"
	"github.com/agentbox/agentbox/internal/trace"
)

// File is the store's database file in a session directory.
const File = "journal.db"

var (
	// ErrFenced: another driver took the session; this one may not commit.
	ErrFenced = errors.New("journal: fenced: a newer driver holds the session")
	// ErrConflict: an event with this seq is stored already, with other content.
	ErrConflict = errors.New("journal: conflicting event")
	// ErrGap: the event does not follow the last stored one.
	ErrGap = errors.New("journal: seq gap")
	// ErrNoSession: the directory holds no session.
	ErrNoSession = errors.New("journal: no session in this directory")
)

// migrations bring a store to schemaVersion; migrations[i] takes it from
// version i to i+1. PRAGMA user_version records where a store is.
var migrations = []string{
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
	 CREATE TABLE events (seq INTEGER PRIMARY KEY, epoch INTEGER NOT NULL, type TEXT NOT NULL,
	   call_id TEXT NOT NULL, hash TEXT NOT NULL, record BLOB NOT NULL);
	 INSERT INTO meta VALUES ('epoch', '0');`,
	// v2: snapshots, so recovery replays only the events after the watermark.
	`CREATE TABLE snapshots (seq INTEGER PRIMARY KEY, epoch INTEGER NOT NULL, state BLOB NOT NULL);`,
	// v3: the mailbox of approval answers (answers.go).
	`CREATE TABLE answers (request TEXT PRIMARY KEY, answer BLOB NOT NULL);`,
	// v4: the steering inbox (steer.go).
	`CREATE TABLE steers (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, message TEXT NOT NULL,
	   by TEXT NOT NULL, at TEXT NOT NULL);`,
}

// schemaVersion is the version this code writes.
var schemaVersion = len(migrations)

// Options configure a Store.
type Options struct {
	// NoSync commits without fsync: the store survives its process being killed
	// (the page cache stays), not a power loss. For tests.
	NoSync bool
	// SnapshotEvery is how many events a driver appends between snapshots
	// (default 32).
	SnapshotEvery int
	// Crash, if set, is called at the store's crash points (Point names them).
	Crash func(point string)
}

// Store is one session's journal.
type Store struct {
	o  Options
	db *sql.DB
}

// Open opens (creating) the store in dir and migrates it to the current schema.
func Open(dir string, o Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: session directory: %w", err)
	}
	if o.SnapshotEvery <= 0 {
		o.SnapshotEvery = 32
	}
	sync := "FULL"
	if o.NoSync {
		sync = "OFF"
	}
	dsn := "file:" + filepath.Join(dir, File) + "?_txlock=immediate&_pragma=busy_timeout(10000)" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(" + sync + ")"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	db.SetMaxOpenConns(1)
	s := &Store{o: o, db: db}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate() error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("journal: migrate: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("journal: schema version: %w", err)
	}
	if v > schemaVersion {
		return fmt.Errorf("journal: the store has schema version %d, newer than this agentbox's %d: use a newer agentbox", v, schemaVersion)
	}
	for ; v < schemaVersion; v++ {
		if _, err := tx.Exec(migrations[v]); err != nil {
			return fmt.Errorf("journal: migrate to schema %d: %w", v+1, err)
		}
	}
	if _, err := tx.Exec(`PRAGMA user_version = ` + strconv.Itoa(schemaVersion)); err != nil {
		return fmt.Errorf("journal: migrate: %w", err)
	}
	return tx.Commit()
}

// SetMeta stores a value under key (the session's options, for resume).
func (s *Store) SetMeta(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(`INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, string(b))
	return err
}

// Meta reads the value under key into v; ErrNoSession if there is none.
func (s *Store) Meta(key string, v any) error {
	var b string
	err := s.db.QueryRow(`SELECT value FROM meta WHERE key = ?`, key).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w (no %s recorded)", ErrNoSession, key)
	}
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(b), v)
}

// Epoch returns the session's current epoch: that of its newest driver.
func (s *Store) Epoch() (int64, error) {
	var e int64
	err := s.db.QueryRow(`SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'epoch'`).Scan(&e)
	return e, err
}

// Acquire makes a new driver of the session: it takes the next epoch, which
// fences every older driver.
func (s *Store) Acquire(ctx context.Context) (*Driver, error) {
	var e int64
	err := s.db.QueryRowContext(ctx, `UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'epoch' RETURNING CAST(value AS INTEGER)`).Scan(&e)
	if err != nil {
		return nil, fmt.Errorf("journal: acquire: %w", err)
	}
	st, err := s.Load()
	if err != nil {
		return nil, err
	}
	return &Driver{s: s, epoch: e, state: st}, nil
}

// Events returns the stored events after seq, in order.
func (s *Store) Events(after int64) ([]trace.Event, error) {
	rows, err := s.db.Query(`SELECT record FROM events WHERE seq > ? ORDER BY seq`, after)
	if err != nil {
		return nil, fmt.Errorf("journal: read events: %w", err)
	}
	defer rows.Close()
	var out []trace.Event
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var e trace.Event
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("journal: event after %d: %w", after, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Load returns the session's state: the latest snapshot, then the events after
// its watermark folded in. The events' hash chain is checked from the snapshot on.
func (s *Store) Load() (*State, error) {
	st := NewState()
	var b []byte
	err := s.db.QueryRow(`SELECT state FROM snapshots ORDER BY seq DESC LIMIT 1`).Scan(&b)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("journal: read snapshot: %w", err)
	default:
		if err := json.Unmarshal(b, st); err != nil {
			return nil, fmt.Errorf("journal: snapshot: %w", err)
		}
		st.FromSnapshot = st.Seq
	}
	evs, err := s.Events(st.Seq)
	if err != nil {
		return nil, err
	}
	c := chain.Resume(nil, st.Hash)
	for _, e := range evs {
		if err := verifyLink(c, e); err != nil {
			return nil, err
		}
		if err := st.Apply(e); err != nil {
			return nil, err
		}
	}
	st.Replayed = len(evs)
	return st, nil
}

// verifyLink checks that e follows the chain c and advances it.
func verifyLink(c *chain.Chain, e trace.Event) error {
	if e.PrevHash != c.Last() {
		return fmt.Errorf("journal: event %d: prev_hash does not match event %d's hash: the journal was edited", e.Seq, e.Seq-1)
	}
	h := e.Hash
	e.Hash = ""
	canon, err := chain.Canonical(e)
	if err != nil {
		return fmt.Errorf("journal: event %d: %w", e.Seq, err)
	}
	if _, sum := c.Link(canon); sum != h {
		return fmt.Errorf("journal: event %d: hash mismatch: the journal was edited", e.Seq)
	}
	return nil
}

// Driver appends a session's events under one epoch. It is a trace.Sink.
type Driver struct {
	s     *Store
	epoch int64
	state *State // the fold of what this driver has seen, for snapshots
	since int    // events appended since the last snapshot
}

// Epoch returns the driver's fencing token.
func (d *Driver) Epoch() int64 { return d.epoch }

// State returns the fold of the session as of the driver's last append.
func (d *Driver) State() *State { return d.state }

// Append commits e, or fails: ErrFenced if a newer driver took the session,
// ErrGap if e does not follow the last event, ErrConflict if its seq is taken by
// another event. Appending an event already stored (the same seq and hash) is a
// no-op, so a retried append is safe. Crash points: "seq:N" once event N is
// committed, before anything acts on it.
func (d *Driver) Append(e trace.Event) error {
	rec, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tx, err := d.s.db.Begin()
	if err != nil {
		return fmt.Errorf("journal: append %d: %w", e.Seq, err)
	}
	defer tx.Rollback()
	var epoch, last int64
	if err := tx.QueryRow(`SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'epoch'`).Scan(&epoch); err != nil {
		return fmt.Errorf("journal: append %d: %w", e.Seq, err)
	}
	if epoch != d.epoch {
		return fmt.Errorf("%w (driver epoch %d, session epoch %d)", ErrFenced, d.epoch, epoch)
	}
	if err := tx.QueryRow(`SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&last); err != nil {
		return err
	}
	switch {
	case e.Seq <= last:
		var h string
		if err := tx.QueryRow(`SELECT hash FROM events WHERE seq = ?`, e.Seq).Scan(&h); err != nil {
			return err
		}
		if h != e.Hash {
			return fmt.Errorf("%w: seq %d is stored with hash %s, not %s", ErrConflict, e.Seq, h, e.Hash)
		}
		return nil
	case e.Seq != last+1:
		return fmt.Errorf("%w: event %d after %d", ErrGap, e.Seq, last)
	}
	if _, err := tx.Exec(`INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)`, e.Seq, d.epoch, string(e.Type), e.CallID, e.Hash, rec); err != nil {
		return fmt.Errorf("journal: append %d: %w", e.Seq, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("journal: commit %d: %w", e.Seq, err)
	}
	if err := d.state.Apply(e); err != nil {
		return err
	}
	d.s.crash("seq:" + strconv.FormatInt(e.Seq, 10))
	if d.since++; d.since >= d.s.o.SnapshotEvery {
		d.since = 0
		return d.snapshot()
	}
	return nil
}

// snapshot stores the driver's state with its watermark. Crash point
// "snapshot:N": inside the write of the snapshot at seq N, before it commits.
func (d *Driver) snapshot() error {
	b, err := json.Marshal(d.state)
	if err != nil {
		return err
	}
	tx, err := d.s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var epoch int64
	if err := tx.QueryRow(`SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'epoch'`).Scan(&epoch); err != nil {
		return err
	}
	if epoch != d.epoch {
		return fmt.Errorf("%w (driver epoch %d, session epoch %d)", ErrFenced, d.epoch, epoch)
	}
	if _, err := tx.Exec(`INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?)`, d.state.Seq, d.epoch, b); err != nil {
		return fmt.Errorf("journal: snapshot %d: %w", d.state.Seq, err)
	}
	d.s.crash("snapshot:" + strconv.FormatInt(d.state.Seq, 10))
	return tx.Commit()
}

func (s *Store) crash(point string) {
	if s.o.Crash != nil {
		s.o.Crash(point)
	}
}
