package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// QuotaError is an ErrQuota that says what would free room.
type QuotaError struct {
	Msg    string
	Action string
}

func (e *QuotaError) Error() string { return ErrQuota.Error() + ": " + e.Msg }
func (e *QuotaError) Unwrap() error { return ErrQuota }

// load builds the index from the records on disk, and removes blobs no record
// names (a crash between a blob's rename and its record's).
func (s *store) load() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	dirs, err := os.ReadDir(filepath.Join(s.dir, "owners"))
	if err != nil {
		return fmt.Errorf("artifact store: %w", err)
	}
	for _, d := range dirs {
		files, err := os.ReadDir(filepath.Join(s.dir, "owners", d.Name()))
		if err != nil {
			return fmt.Errorf("artifact store: %w", err)
		}
		for _, f := range files {
			p := filepath.Join(s.dir, "owners", d.Name(), f.Name())
			b, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("artifact store: %w", err)
			}
			var rec record
			if json.Unmarshal(b, &rec) != nil || rec.Owner.Tenant == "" {
				continue // not a record of ours
			}
			if rec.StoredAt.IsZero() { // written before records carried it
				if fi, err := f.Info(); err == nil {
					rec.StoredAt = fi.ModTime().UTC()
				}
			}
			if _, err := os.Stat(s.blob(strings.TrimPrefix(rec.Ref, "sha256:"))); err != nil {
				os.Remove(p) // a record without its blob reads as nothing
				continue
			}
			s.add(rec)
		}
	}
	blobs, err := os.ReadDir(filepath.Join(s.dir, "blobs"))
	if err != nil {
		return fmt.Errorf("artifact store: %w", err)
	}
	for _, b := range blobs {
		if s.blobs[b.Name()] == nil {
			os.Remove(s.blob(b.Name()))
		}
	}
	return nil
}

// add counts rec in the index (replacing the owner's record of the same bytes).
func (s *store) add(rec record) {
	t, sum := rec.Owner.Tenant, strings.TrimPrefix(rec.Ref, "sha256:")
	if s.records[t] == nil {
		s.records[t] = map[string]record{}
	}
	if _, ok := s.records[t][sum]; !ok {
		b := s.blobs[sum]
		if b == nil {
			b = &blob{size: rec.Size}
			s.blobs[sum] = b
			s.total += rec.Size
		}
		b.refs++
	}
	s.records[t][sum] = rec
}

// drop removes a record, and its blob with the last record.
func (s *store) drop(tenant, sum string) error {
	err := os.Remove(s.recordPath(tenant, sum))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("artifact store: %w", err)
	}
	delete(s.records[tenant], sum)
	if len(s.records[tenant]) == 0 {
		delete(s.records, tenant)
	}
	if b := s.blobs[sum]; b != nil {
		if b.refs--; b.refs == 0 {
			delete(s.blobs, sum)
			s.total -= b.size
			if err := os.Remove(s.blob(sum)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("artifact store: %w", err)
			}
		}
	}
	return nil
}

// usage is what tenant keeps: bytes and count, leaving out its record of sum.
func (s *store) usage(tenant, sum string) (bytes int64, count int) {
	for k, r := range s.records[tenant] {
		if k != sum {
			bytes += r.Size
			count++
		}
	}
	return bytes, count
}

// fitsLocked checks that tenant may keep an artifact of size bytes whose content
// is sum (replacing its record of the same bytes, if any). Over its quota, the
// expired artifacts are collected first; then, still over, it is a *QuotaError.
func (s *store) fitsLocked(tenant, sum string, size int64) error {
	q, ok := s.quotas[tenant]
	if !ok || (q.Bytes <= 0 && q.Count <= 0) {
		return nil
	}
	over := func() bool {
		b, n := s.usage(tenant, sum)
		return (q.Bytes > 0 && b+size > q.Bytes) || (q.Count > 0 && n+1 > q.Count)
	}
	if !over() {
		return nil
	}
	s.gcLocked()
	if !over() {
		return nil
	}
	b, n := s.usage(tenant, sum)
	return &QuotaError{
		Msg: fmt.Sprintf("the tenant's artifacts would take %d bytes in %d artifacts; its artifact quota is %d bytes in %d artifacts (0: no bound)",
			b+size, n+1, q.Bytes, q.Count),
		Action: fmt.Sprintf("artifacts are removed %v after they were stored: store less until then, or ask the operator for a larger artifact quota", s.ttl),
	}
}

// gc removes the records older than ttl, then, while the blobs take more than
// bound, the oldest records of any tenant; a blob goes with its last record. It
// is the background collector's, and put's when a quota or the bound is hit.
func (s *store) gc() (removed int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gcLocked()
}

func (s *store) gcLocked() (removed int, err error) {
	type key struct {
		tenant, sum string
		at          time.Time
	}
	var all []key
	for t, recs := range s.records {
		for sum, r := range recs {
			all = append(all, key{t, sum, r.StoredAt})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	cutoff := s.now().Add(-s.ttl)
	var errs []error
	for _, k := range all {
		if !k.at.Before(cutoff) && s.total <= s.bound {
			break
		}
		if err := s.drop(k.tenant, k.sum); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
