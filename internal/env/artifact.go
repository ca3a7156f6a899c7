package env

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/workspace"
)

// store is the artifact store: content-addressed blobs plus, per tenant, a record
// of each artifact it owns. A blob is shared by every tenant that stored the same
// bytes; a tenant reads a blob only through its own record, so a reference it
// does not own is ErrNotFound, exactly like one that does not exist (a tenant
// cannot learn that another stored some content by guessing its hash).
//
// Layout: blobs/<hex> (0600), owners/<sha256(tenant)>/<hex>.json, tmp/. Records
// and blobs are written to tmp and renamed into place. The store survives
// restarts; it is bounded (see gc): a record lives ttl from when it was stored
// (or stored again), the blobs together take at most maxBytes (the oldest records
// go first), and each tenant keeps at most its quota. A blob goes with its last
// record. An index in memory, rebuilt from the records at open, counts it all.
type store struct {
	dir     string
	maxSize int64 // one artifact
	ttl     time.Duration
	bound   int64 // all blobs
	quotas  map[string]ArtifactQuota
	now     func() time.Time

	mu      sync.Mutex                   // the index, and every change to blobs and records
	records map[string]map[string]record // tenant → hex → its record
	blobs   map[string]*blob             // hex → size and records
	total   int64                        // bytes of all blobs
}

// record is an owner record as stored: the Artifact and when it was stored.
type record struct {
	Artifact
	StoredAt time.Time `json:"stored_at"`
}

type blob struct {
	size int64
	refs int
}

// ArtifactQuota bounds what one tenant keeps in the artifact store (0: no bound
// but the store's).
type ArtifactQuota struct {
	Bytes int64 // the sizes of its artifacts, summed (a blob shared with another tenant counts for both)
	Count int
}

func openStore(cfg Config) (*store, error) {
	dir := cfg.ArtifactDir
	for _, d := range []string{dir, filepath.Join(dir, "blobs"), filepath.Join(dir, "owners"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("artifact store: %w", err)
		}
	}
	// Leftovers of a crash between create and rename.
	if ents, err := os.ReadDir(filepath.Join(dir, "tmp")); err == nil {
		for _, e := range ents {
			os.Remove(filepath.Join(dir, "tmp", e.Name()))
		}
	}
	s := &store{dir: dir, maxSize: cfg.MaxArtifactBytes, ttl: cfg.ArtifactTTL, bound: cfg.ArtifactStoreBytes,
		quotas: cfg.ArtifactQuotas, now: cfg.Now, records: map[string]map[string]record{}, blobs: map[string]*blob{}}
	if err := s.load(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gcLocked()
	return s, nil
}

// put copies r into the store and records a for a's owner, filling in Ref and
// Size. More than maxSize bytes is a *workspace.TooLargeError naming a.Name;
// more than the owner's quota, once expired artifacts are collected, is a
// *QuotaError and stores nothing. size, if known (> 0), lets a copy larger than
// the whole quota be refused before it is made.
func (s *store) put(r io.Reader, size int64, a Artifact) (Artifact, error) {
	if q := s.quotas[a.Owner.Tenant]; q.Bytes > 0 && size > q.Bytes {
		return Artifact{}, &QuotaError{Msg: fmt.Sprintf("%d bytes exceed the tenant's artifact quota of %d bytes", size, q.Bytes),
			Action: "store a smaller file, or ask the operator for a larger artifact quota"}
	}
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "blob-")
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact store: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, s.maxSize+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact store: copy: %w", err)
	}
	if n > s.maxSize {
		return Artifact{}, &workspace.TooLargeError{Path: a.Name, Size: n, Limit: s.maxSize}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	a.Ref, a.Size = "sha256:"+sum, n

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fitsLocked(a.Owner.Tenant, sum, n); err != nil {
		return Artifact{}, err
	}
	if err := os.Rename(tmp.Name(), s.blob(sum)); err != nil {
		return Artifact{}, fmt.Errorf("artifact store: %w", err)
	}
	rec := record{Artifact: a, StoredAt: s.now().UTC()}
	if err := s.write(rec); err != nil {
		if s.blobs[sum] == nil {
			os.Remove(s.blob(sum))
		}
		return Artifact{}, err
	}
	s.add(rec)
	if s.total > s.bound {
		s.gcLocked()
	}
	return a, nil
}

func (s *store) blob(sum string) string { return filepath.Join(s.dir, "blobs", sum) }

func (s *store) ownerDir(tenant string) string {
	h := sha256.Sum256([]byte(tenant))
	return filepath.Join(s.dir, "owners", hex.EncodeToString(h[:]))
}

func (s *store) recordPath(tenant, sum string) string {
	return filepath.Join(s.ownerDir(tenant), sum+".json")
}

// write writes rec's file atomically; a later export of the same bytes by the
// same tenant replaces it.
func (s *store) write(rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.ownerDir(rec.Owner.Tenant), 0o700); err != nil {
		return fmt.Errorf("artifact store: %w", err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(s.dir, "tmp", "rec-"+hex.EncodeToString(rnd[:]))
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("artifact store: %w", err)
	}
	if err := os.Rename(tmp, s.recordPath(rec.Owner.Tenant, strings.TrimPrefix(rec.Ref, "sha256:"))); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("artifact store: %w", err)
	}
	return nil
}

// open returns tenant's record of ref and the blob, or ErrNotFound.
func (s *store) open(tenant, ref string) (Artifact, *os.File, error) {
	sum, ok := strings.CutPrefix(ref, "sha256:")
	if !ok || len(sum) != sha256.Size*2 || strings.Trim(sum, "0123456789abcdef") != "" {
		return Artifact{}, nil, fmt.Errorf("%w: artifact reference %q: want sha256:<64 lowercase hex digits>", ErrInvalid, ref)
	}
	// Under the lock: the collector removes a record and its blob together.
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(s.recordPath(tenant, sum))
	if errors.Is(err, fs.ErrNotExist) {
		return Artifact{}, nil, fmt.Errorf("artifact %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return Artifact{}, nil, fmt.Errorf("artifact store: %w", err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Artifact{}, nil, fmt.Errorf("artifact store: record of %s: %w", ref, err)
	}
	f, err := os.Open(s.blob(sum))
	if err != nil {
		return Artifact{}, nil, fmt.Errorf("artifact store: %w", err)
	}
	return rec.Artifact, f, nil
}
