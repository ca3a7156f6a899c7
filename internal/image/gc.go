package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// Remove forgets the name of an image. The image and its layers stay until GC
// finds nothing else holding them.
func (s *Store) Remove(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	unlock, err := s.lock(shared)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(s.namePath(name)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s", ErrNotFound, name)
		}
		return err
	}
	return syncDir(filepath.Dir(s.namePath(name)))
}

// GCOptions configure GC.
type GCOptions struct {
	// Cache also drops the build cache, so the layers only it held are freed.
	Cache bool
}

// GCResult counts what GC removed; Bytes is the file bytes of the layers.
type GCResult struct {
	Images, Layers, CacheEntries int
	Bytes                        int64
}

// GC removes every image that no name points to and no open Image holds, then
// every layer that no remaining image or build cache entry uses, and whatever a
// crashed import left in tmp/. It holds the store lock exclusively, so it waits
// for running imports and builds, and they for it.
func (s *Store) GC(ctx context.Context, opts GCOptions) (GCResult, error) {
	var res GCResult
	unlock, err := s.lock(exclusive)
	if err != nil {
		return res, err
	}
	defer unlock()
	names, err := s.names()
	if err != nil {
		return res, err
	}
	named := map[v1.Hash]bool{}
	for _, id := range names {
		named[id] = true
	}
	used := map[v1.Hash]bool{}
	ids, err := s.imageIDs()
	if err != nil {
		return res, err
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, _, rerr := s.readRecord(id)
		if named[id] || s.leased(id) {
			if rerr != nil {
				return res, rerr
			}
			for _, l := range r.Layers {
				used[l] = true
			}
			continue
		}
		if err := os.RemoveAll(s.imageDir(id)); err != nil {
			return res, err
		}
		res.Images++
	}
	cached, dropped, err := s.cacheLayers(opts.Cache)
	if err != nil {
		return res, err
	}
	res.CacheEntries = dropped
	for l := range cached {
		used[l] = true
	}
	layers, err := os.ReadDir(filepath.Join(s.LayersDir(), "sha256"))
	if err != nil {
		return res, err
	}
	for _, e := range layers {
		d := v1.Hash{Algorithm: "sha256", Hex: e.Name()}
		if used[d] {
			continue
		}
		li, _ := s.layerInfo(d)
		if err := os.RemoveAll(s.layerDir(d)); err != nil {
			return res, err
		}
		res.Layers++
		res.Bytes += li.Bytes
	}
	// No import runs (they hold the lock shared): tmp/ and locks/ hold only
	// leftovers.
	for _, d := range []string{s.tmpDir(), filepath.Join(s.dir, "locks")} {
		ents, err := os.ReadDir(d)
		if err != nil {
			return res, err
		}
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// imageIDs lists the images in the store.
func (s *Store) imageIDs() ([]v1.Hash, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "images", "sha256"))
	if err != nil {
		return nil, err
	}
	var out []v1.Hash
	for _, e := range ents {
		d := v1.Hash{Algorithm: "sha256", Hex: e.Name()}
		if checkDigest("image", d) == nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// leased reports whether an open Image holds image id.
func (s *Store) leased(id v1.Hash) bool {
	f, err := flock(filepath.Join(s.imageDir(id), "lease"), unix.LOCK_EX|unix.LOCK_NB)
	if err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	f.Close()
	return false
}
