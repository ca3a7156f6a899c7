package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Record is what the store knows of an image besides its OCI config.
type Record struct {
	// ID is the digest of the image's OCI config (as Docker names images).
	ID v1.Hash `json:"id"`
	// Layers are the diff_ids of its layers, bottom first.
	Layers []v1.Hash `json:"layers"`
	// Host: the host's system directories lie below the layers (a build spec
	// with base "host").
	Host bool `json:"host,omitempty"`
	// Source is what it was imported from (with the manifest digest for a
	// registry or layout), or "build".
	Source string `json:"source"`
	// Created is when it entered this store.
	Created time.Time `json:"created"`
	// Packages are the Debian packages installed in it (dpkg's status file; on
	// a host base, the host's), if any.
	Packages []Package `json:"packages,omitempty"`
	// Build says how a built image was made.
	Build *BuildRecord `json:"build,omitempty"`
}

// readRecord reads the record and the raw OCI config of image id.
func (s *Store) readRecord(id v1.Hash) (*Record, []byte, error) {
	dir := s.imageDir(id)
	b, err := os.ReadFile(filepath.Join(dir, "image.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, nil, fmt.Errorf("image %s: %w", id, err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("image %s: %w", id, err)
	}
	return &r, cfg, nil
}

// writeImage publishes an image whose layers are all in the store: its config
// (which names it) and record, renamed into place as one directory. An image
// already there is kept as it is.
func (s *Store) writeImage(r *Record, config []byte) (*Record, error) {
	sum := sha256.Sum256(config)
	r.ID = v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	if old, _, err := s.readRecord(r.ID); err == nil {
		return old, nil
	}
	for _, l := range r.Layers {
		if _, err := s.layerInfo(l); err != nil {
			return nil, fmt.Errorf("image %s: layer %s: %w", r.ID, l, err)
		}
	}
	if r.Created.IsZero() {
		r.Created = time.Now().UTC()
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(s.tmpDir(), "image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for name, data := range map[string][]byte{"config.json": config, "image.json": b, "lease": nil} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	if err := syncfs(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, s.imageDir(r.ID)); err != nil {
		if old, _, err := s.readRecord(r.ID); err == nil {
			return old, nil
		}
		return nil, fmt.Errorf("publish image %s: %w", r.ID, err)
	}
	return r, syncDir(filepath.Dir(s.imageDir(r.ID)))
}
