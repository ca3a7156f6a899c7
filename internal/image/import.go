package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ImportOptions configure Import.
type ImportOptions struct {
	// Name, if set, names the image (replacing what the name named).
	Name string
}

// Import brings the image of source (see ParseSource) into the store: every
// layer not already there is unpacked once, checked against its diff_id, and
// published; the image is named if asked.
func (s *Store) Import(ctx context.Context, source string, opts ImportOptions) (*Record, error) {
	if opts.Name != "" {
		if err := CheckName(opts.Name); err != nil {
			return nil, err
		}
	}
	src, err := ParseSource(source)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(shared)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := s.importSource(ctx, src)
	if err != nil {
		return nil, err
	}
	if opts.Name != "" {
		if err := s.setName(opts.Name, r.ID); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// importSource imports src; the caller holds the store lock.
func (s *Store) importSource(ctx context.Context, src Source) (*Record, error) {
	if src.Kind == SourceDebian {
		return s.bootstrap(ctx, Debian{Suite: src.Arg})
	}
	img, desc, cleanup, err := openImage(ctx, src, s.tmpDir(), s.lim)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	r, err := s.importImage(ctx, img, desc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return r, nil
}

// maxConfig bounds an image's config, which is read into memory (configs are a
// few kilobytes; go-containerregistry bounds manifests at 100 MiB itself).
const maxConfig = 8 << 20

// importImage unpacks the layers of img and records it.
func (s *Store) importImage(ctx context.Context, img v1.Image, source string) (*Record, error) {
	raw, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if m.Config.Size > maxConfig {
		return nil, fmt.Errorf("the manifest says the config is %d bytes; an image config is at most %d", m.Config.Size, maxConfig)
	}
	want := m.Config.Digest
	sum := sha256.Sum256(raw)
	if got := (v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}); got != want {
		return nil, &DigestError{What: "image config", Want: want.String(), Got: got.String()}
	}
	cf, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	if !platformOK(cf.OS, cf.Architecture) {
		return nil, fmt.Errorf("the image is for %s/%s; this host runs linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	diffIDs := cf.RootFS.DiffIDs
	if len(layers) != len(diffIDs) {
		return nil, fmt.Errorf("the manifest has %d layers, the config %d diff_ids", len(layers), len(diffIDs))
	}
	if len(layers) > s.lim.Layers {
		return nil, &LimitError{What: fmt.Sprintf("the image has %d layers", len(layers)), Field: "Layers", Limit: int64(s.lim.Layers)}
	}
	for i, l := range layers {
		if _, err := s.ensureLayer(ctx, diffIDs[i], l.Uncompressed); err != nil {
			return nil, fmt.Errorf("layer %d of %d: %w", i+1, len(layers), err)
		}
	}
	r := &Record{Layers: diffIDs, Source: source, Packages: packagesOf(s.layerDirs(diffIDs))}
	return s.writeImage(r, raw)
}

// layerDirs returns the unpacked trees of layers.
func (s *Store) layerDirs(layers []v1.Hash) []string {
	out := make([]string, len(layers))
	for i, d := range layers {
		out[i] = s.layerDir(d) + "/root"
	}
	return out
}
