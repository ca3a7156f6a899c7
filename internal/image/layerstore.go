package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// layerInfo reads the record of a published layer; os.ErrNotExist if there is none.
func (s *Store) layerInfo(d v1.Hash) (LayerInfo, error) {
	var li LayerInfo
	b, err := os.ReadFile(filepath.Join(s.layerDir(d), "layer.json"))
	if err != nil {
		return li, err
	}
	if err := json.Unmarshal(b, &li); err != nil {
		return li, fmt.Errorf("layer %s: %w", d, err)
	}
	return li, nil
}

// ensureLayer makes layer want present, unpacking what open returns if it is
// not. Two processes asking for the same layer at once unpack it once: the
// second waits on the layer's flock and finds it published.
func (s *Store) ensureLayer(ctx context.Context, want v1.Hash, open func() (io.ReadCloser, error)) (LayerInfo, error) {
	if err := checkDigest("layer", want); err != nil {
		return LayerInfo{}, err
	}
	if li, err := s.layerInfo(want); err == nil {
		return li, nil
	}
	l, err := flock(filepath.Join(s.dir, "locks", "layer-"+want.Hex), unix.LOCK_EX)
	if err != nil {
		return LayerInfo{}, err
	}
	defer l.Close()
	if li, err := s.layerInfo(want); err == nil {
		return li, nil
	}
	rc, err := open()
	if err != nil {
		return LayerInfo{}, fmt.Errorf("layer %s: %w", want, err)
	}
	defer rc.Close()
	tmp, li, err := s.unpackTemp(ctx, rc)
	defer os.RemoveAll(tmp)
	if err != nil {
		return LayerInfo{}, fmt.Errorf("layer %s: %w", want, err)
	}
	if li.DiffID != want {
		return LayerInfo{}, &DigestError{What: "layer", Want: want.String(), Got: li.DiffID.String()}
	}
	return li, s.publishLayer(tmp, li)
}

// addLayer unpacks a layer archive whose digest is not known beforehand (a
// bootstrap, a build step) and publishes it, or finds it already there.
func (s *Store) addLayer(ctx context.Context, r io.Reader) (LayerInfo, error) {
	tmp, li, err := s.unpackTemp(ctx, r)
	defer os.RemoveAll(tmp)
	if err != nil {
		return LayerInfo{}, err
	}
	l, err := flock(filepath.Join(s.dir, "locks", "layer-"+li.DiffID.Hex), unix.LOCK_EX)
	if err != nil {
		return LayerInfo{}, err
	}
	defer l.Close()
	if old, err := s.layerInfo(li.DiffID); err == nil {
		return old, nil
	}
	return li, s.publishLayer(tmp, li)
}

// unpackTemp unpacks r into a new temporary directory of the store (tmp/root).
// The caller removes tmp.
func (s *Store) unpackTemp(ctx context.Context, r io.Reader) (tmp string, li LayerInfo, err error) {
	tmp, err = os.MkdirTemp(s.tmpDir(), "layer-")
	if err != nil {
		return "", li, err
	}
	li, err = unpack(ctx, r, filepath.Join(tmp, "root"), s.lim)
	return tmp, li, err
}

// publishLayer writes the layer's record beside its tree, makes it durable, and
// renames the directory into place: before the rename the layer does not exist,
// after it is complete. The caller holds the layer's lock.
func (s *Store) publishLayer(tmp string, li LayerInfo) error {
	b, err := json.MarshalIndent(li, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "layer.json"), b, 0o644); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o711); err != nil {
		return err
	}
	if err := syncfs(tmp); err != nil {
		return err
	}
	// The rename itself need not be durable: lost in a crash, the layer is
	// merely absent, and the next syncfs (every image's, before it names its
	// layers) makes it durable anyway.
	if err := os.Rename(tmp, s.layerDir(li.DiffID)); err != nil {
		if errors.Is(err, os.ErrExist) || errors.Is(err, unix.ENOTEMPTY) {
			return nil // published meanwhile by a process that did not take the lock
		}
		return fmt.Errorf("publish layer %s: %w", li.DiffID, err)
	}
	return nil
}

// syncDir makes a rename in directory p durable.
func syncDir(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
