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

	"github.com/agentbox/agentbox/internal/workspace"
)

// store is the artifact store: content-addressed blobs plus, per tenant, a record
// of each artifact it owns. A blob is shared by every tenant that stored the same
// bytes; a tenant reads a blob only through its own record, so a reference it
// does not own is ErrNotFound, exactly like one that does not exist (a tenant
// cannot learn that another stored some content by guessing its hash).
//
// Layout: blobs/<hex> (0600), owners/<sha256(tenant)>/<hex>.json, tmp/. Records
// and blobs are written to tmp and renamed into place. Nothing is ever removed:
// the store survives restarts and has no retention policy yet.
type store struct {
	dir     string
	maxSize int64
}

func openStore(dir string, maxSize int64) (*store, error) {
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
	return &store{dir: dir, maxSize: maxSize}, nil
}

// put copies r into the store and records a for a's owner, filling in Ref and
// Size. More than maxSize bytes is a *workspace.TooLargeError naming a.Name.
func (s *store) put(r io.Reader, a Artifact) (Artifact, error) {
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
	if err := os.Rename(tmp.Name(), s.blob(sum)); err != nil {
		return Artifact{}, fmt.Errorf("artifact store: %w", err)
	}
	a.Ref, a.Size = "sha256:"+sum, n
	if err := s.record(a); err != nil {
		return Artifact{}, err
	}
	return a, nil
}

// putFile stores the file at path (a command's output on the host).
func (s *store) putFile(path string, a Artifact) (Artifact, error) {
	f, err := os.Open(path)
	if err != nil {
		return Artifact{}, fmt.Errorf("artifact store: %w", err)
	}
	defer f.Close()
	return s.put(f, a)
}

func (s *store) blob(sum string) string { return filepath.Join(s.dir, "blobs", sum) }

func (s *store) ownerDir(tenant string) string {
	h := sha256.Sum256([]byte(tenant))
	return filepath.Join(s.dir, "owners", hex.EncodeToString(h[:]))
}

// record writes a's owner record atomically; a later export of the same bytes by
// the same tenant replaces it.
func (s *store) record(a Artifact) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	dir := s.ownerDir(a.Owner.Tenant)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("artifact store: %w", err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(s.dir, "tmp", "rec-"+hex.EncodeToString(rnd[:]))
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("artifact store: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, strings.TrimPrefix(a.Ref, "sha256:")+".json")); err != nil {
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
	b, err := os.ReadFile(filepath.Join(s.ownerDir(tenant), sum+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Artifact{}, nil, fmt.Errorf("artifact %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return Artifact{}, nil, fmt.Errorf("artifact store: %w", err)
	}
	var a Artifact
	if err := json.Unmarshal(b, &a); err != nil {
		return Artifact{}, nil, fmt.Errorf("artifact store: record of %s: %w", ref, err)
	}
	f, err := os.Open(s.blob(sum))
	if err != nil {
		return Artifact{}, nil, fmt.Errorf("artifact store: %w", err)
	}
	return a, f, nil
}
