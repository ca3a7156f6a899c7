package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/sandbox"
)

// A stateRecord is what an environment's directory (StateDir/envs/<id>/record.json)
// says of it, so that a Manager started after its process died restores it
// (see Recover): who owns it, what it was created with and what its sandbox
// keeps on the host (sandbox.Leftover: the upper layer with every file written).
// It is written before Create reports the environment, replaced atomically, and
// read as untrusted input: see readRecord.
type stateRecord struct {
	Version int              `json:"version"`
	ID      string           `json:"id"`
	Options CreateOptions    `json:"options"` // Owner empty: a pool member nobody claimed
	Created time.Time        `json:"created_at"`
	Expires time.Time        `json:"expires_at,omitzero"`
	Sandbox sandbox.Leftover `json:"sandbox"`
	// Withheld: the network held secrets or scan values, which are never
	// written to disk; the restored environment's network reaches nothing.
	Withheld bool `json:"withheld,omitempty"`
}

const (
	recordVersion = 1
	recordName    = "record.json"
	maxRecord     = 1 << 20
)

// envIDPattern is every id newID makes: a directory under envs named otherwise
// is no environment's.
var envIDPattern = regexp.MustCompile(`^env-[0-9a-f]{24}$`)

// saveRecord writes e's record as of now (see adopt, SetNetwork, Resume).
func (e *environment) saveRecord() error {
	e.recordMu.Lock()
	defer e.recordMu.Unlock()
	e.mu.Lock()
	if e.top != nil || e.info.Isolation == runner.IsolationGvisor { // on snapshot layers or gVisor, which die with this process: see start
		e.mu.Unlock()
		return nil
	}
	o := e.opts
	if e.info.Network != nil {
		n := *e.info.Network
		o.Network = &n
	}
	r := &stateRecord{Version: recordVersion, ID: e.id, Options: o, Created: e.info.CreatedAt, Expires: e.info.ExpiresAt, Sandbox: e.sb.(*sandbox.Sandbox).Leftover()}
	e.mu.Unlock()
	if n := r.Options.Network; n != nil && (len(n.Secrets) > 0 || len(n.Scan.Values) > 0) {
		r.Withheld = true
		n.Secrets = nil
	}
	return e.writeRecord(r)
}

// writeRecord replaces e's record: a new file synced, renamed over the old one,
// the directory synced, so that a crash leaves the old record or the new one.
func (e *environment) writeRecord(r *stateRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(e.dir, recordName+".new")
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("env: state record: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(e.dir, recordName))
	}
	if err == nil {
		err = syncDir(e.dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("env: state record: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readRecord reads the record of the environment directory name under envs. It
// trusts nothing: the directory must be a real one named like an id, the record
// a regular file of at most maxRecord bytes (never reached through a link) whose
// version, id and options check as a Create's would. What its sandbox part names
// is checked by sandbox.Start when it is taken over (sandbox.LeftoverError).
func (m *Manager) readRecord(name string) (*stateRecord, error) {
	if !envIDPattern.MatchString(name) {
		return nil, errors.New("not an environment id")
	}
	dir := filepath.Join(m.envsDir(), name)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, errors.New("not a directory")
	}
	f, err := os.OpenFile(filepath.Join(dir, recordName), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxRecord {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", recordName, maxRecord)
	}
	var r stateRecord
	dec := json.NewDecoder(io.LimitReader(f, maxRecord))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", recordName, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: data after the record", recordName)
	}
	switch {
	case r.Version != recordVersion:
		return nil, fmt.Errorf("%s: version %d, this agentbox reads %d", recordName, r.Version, recordVersion)
	case r.ID != name:
		return nil, fmt.Errorf("%s: names environment %q", recordName, r.ID)
	}
	o := r.Options
	if o.Owner.Tenant != "" {
		if err := validate(&o); err != nil {
			return nil, fmt.Errorf("%s: %w", recordName, err)
		}
	}
	return &r, nil
}
