package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// Options configure a Store. The zero value is the defaults.
type Options struct {
	Limits Limits
}

// Store is the image store in one directory (agentbox's is <state>/image):
//
//	lock                        flock: shared by Import, Build, Open and Remove; exclusive by GC
//	tmp/                        unpacking and downloads, on the same file system
//	locks/layer-<hex>           one flock per layer being unpacked
//	layers/sha256/<hex>/root/   a layer's tree, read-only once published (the overlay's lowerdir)
//	layers/sha256/<hex>/layer.json
//	images/sha256/<hex>/        an image, named by the digest of its OCI config:
//	    config.json  image.json  lease (flock held shared by every open Image)
//	names/<name>                the id of the image called name
//	cache/<key>.json            a build step's (or Debian base's) layer, by cache key
//
// Everything is published by a rename of a complete directory or file, so a crash
// leaves only unreferenced temporary files, which GC removes.
type Store struct {
	dir string
	lim Limits
}

// OpenStore opens the store in dir, creating it if needed. It needs root: layer
// files are owned by the foreign id range (IDBase).
func OpenStore(dir string, opts Options) (*Store, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("image store: %s is not a directory that only root can write", dir)
	}
	s := &Store{dir: dir, lim: opts.Limits.withDefaults()}
	// The layers tree is what a sandbox's init gets (one detached, idmapped
	// mount of it): it must be able to walk down to a layer, not to list.
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{
		{"tmp", 0o700}, {"locks", 0o700}, {"layers", 0o711}, {"layers/sha256", 0o711},
		{"images", 0o700}, {"images/sha256", 0o700}, {"names", 0o700}, {"cache", 0o700},
	} {
		if err := os.Mkdir(filepath.Join(dir, d.path), d.mode); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	return s, nil
}

// StoreDir is where agentbox keeps its image store under its state directory
// (config.DefaultStateDir, or the daemon's state_dir).
func StoreDir(stateDir string) string { return filepath.Join(stateDir, "images") }

// LayersDir is the directory holding every layer: the one tree a sandbox's init
// mounts (idmapped) to reach the layers of its image (see Image.LowerDirs).
func (s *Store) LayersDir() string { return filepath.Join(s.dir, "layers") }

func (s *Store) layerDir(d v1.Hash) string { return filepath.Join(s.dir, "layers", d.Algorithm, d.Hex) }
func (s *Store) imageDir(d v1.Hash) string { return filepath.Join(s.dir, "images", d.Algorithm, d.Hex) }
func (s *Store) tmpDir() string            { return filepath.Join(s.dir, "tmp") }

// lock takes the store lock; the returned func releases it.
func (s *Store) lock(how int) (func(), error) {
	f, err := flock(filepath.Join(s.dir, "lock"), how)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// shared and exclusive are the two ways to take the store lock.
const (
	shared    = unix.LOCK_SH
	exclusive = unix.LOCK_EX
)

// checkDigest accepts only sha256 digests, the only kind the store names files by.
func checkDigest(what string, d v1.Hash) error {
	if d.Algorithm != "sha256" || len(d.Hex) != 64 {
		return fmt.Errorf("%s: digest %q is not sha256", what, d.String())
	}
	for _, c := range d.Hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%s: digest %q is not lowercase hex", what, d.String())
		}
	}
	return nil
}
