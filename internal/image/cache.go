package image

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// cacheEntry is one cached build result: the layer a step (or a Debian
// bootstrap) produced, under the key of its parent and its definition.
type cacheEntry struct {
	Key     string    `json:"key"`
	Layer   v1.Hash   `json:"layer"`
	Step    string    `json:"step"`
	Created time.Time `json:"created"`
}

func (s *Store) cachePath(key string) string { return filepath.Join(s.dir, "cache", key+".json") }

// cacheGet returns the layer cached under key, if it is still in the store.
func (s *Store) cacheGet(key string) (v1.Hash, bool) {
	b, err := os.ReadFile(s.cachePath(key))
	if err != nil {
		return v1.Hash{}, false
	}
	var e cacheEntry
	if json.Unmarshal(b, &e) != nil || e.Key != key || checkDigest("layer", e.Layer) != nil {
		return v1.Hash{}, false
	}
	if _, err := s.layerInfo(e.Layer); err != nil {
		return v1.Hash{}, false
	}
	return e.Layer, true
}

// cachePut records a result (atomically: written aside, renamed into place).
func (s *Store) cachePut(key string, layer v1.Hash, step string) error {
	b, err := json.Marshal(cacheEntry{Key: key, Layer: layer, Step: step, Created: time.Now().UTC()})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.tmpDir(), "cache-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), s.cachePath(key))
}

// cacheLayers returns the layers the build cache holds; with drop it empties
// the cache instead and returns how many entries it dropped.
func (s *Store) cacheLayers(drop bool) (map[v1.Hash]bool, int, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "cache"))
	if err != nil {
		return nil, 0, err
	}
	held, dropped := map[v1.Hash]bool{}, 0
	for _, e := range ents {
		key, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if drop {
			if err := os.Remove(filepath.Join(s.dir, "cache", e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, 0, err
			}
			dropped++
			continue
		}
		if l, ok := s.cacheGet(key); ok {
			held[l] = true
		}
	}
	return held, dropped, nil
}
