package image

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Image is an open image: its layers are held (GC keeps them) until Close.
// Nothing may write to a layer directory: a sandbox stacks them read-only below
// its private upper layer.
type Image struct {
	ID v1.Hash
	// Layers are bottom first (the OCI order); overlayfs takes them top first
	// (LowerDirs).
	Layers []Layer
	// Host: the host's system directories lie below Layers.
	Host   bool
	Config Config
	// LayersDir is the store's tree of layers, which holds every Layer.Dir.
	LayersDir string

	lease *os.File
}

// Layer is one read-only layer directory of an open image.
type Layer struct {
	DiffID v1.Hash
	// Dir is the unpacked tree on the host; Rel is Dir relative to LayersDir.
	Dir, Rel string
}

// Config is the part of an image's OCI config a sandbox uses.
type Config struct {
	Env        []string `json:"env,omitempty"`
	WorkingDir string   `json:"workdir,omitempty"`
	User       string   `json:"user,omitempty"`
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
}

func configOf(raw []byte) (Config, error) {
	cf, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return Config{}, fmt.Errorf("image config: %w", err)
	}
	c := cf.Config
	return Config{Env: c.Env, WorkingDir: c.WorkingDir, User: c.User, Entrypoint: c.Entrypoint, Cmd: c.Cmd}, nil
}

// Open opens the image ref (a name or an id) for a sandbox. Its layers stay in
// the store until Close, whatever Remove and GC do meanwhile.
func (s *Store) Open(ref string) (*Image, error) {
	unlock, err := s.lock(shared)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id, err := s.resolve(ref)
	if err != nil {
		return nil, err
	}
	lease, err := flock(filepath.Join(s.imageDir(id), "lease"), shared)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, ref)
	}
	r, raw, err := s.readRecord(id)
	if err == nil {
		var im *Image
		if im, err = s.image(r, raw); err == nil {
			im.lease = lease
			return im, nil
		}
	}
	lease.Close()
	return nil, err
}

func (s *Store) image(r *Record, raw []byte) (*Image, error) {
	cfg, err := configOf(raw)
	if err != nil {
		return nil, err
	}
	im := &Image{ID: r.ID, Host: r.Host, Config: cfg, LayersDir: s.LayersDir()}
	for _, d := range r.Layers {
		dir := filepath.Join(s.layerDir(d), "root")
		rel, err := filepath.Rel(im.LayersDir, dir)
		if err != nil {
			return nil, err
		}
		im.Layers = append(im.Layers, Layer{DiffID: d, Dir: dir, Rel: rel})
	}
	return im, nil
}

// Close releases the image's layers.
func (im *Image) Close() error {
	if im.lease == nil {
		return nil
	}
	err := im.lease.Close()
	im.lease = nil
	return err
}

// LowerDirs returns the layers as overlayfs's lower directories, top first, for
// an init that has mounted LayersDir at mountpoint.
func (im *Image) LowerDirs(mountpoint string) []string {
	out := make([]string, 0, len(im.Layers))
	for i := len(im.Layers) - 1; i >= 0; i-- {
		out = append(out, filepath.Join(mountpoint, im.Layers[i].Rel))
	}
	return out
}
