package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// nameRE is what an image name looks like: lowercase, digits and ._- with an
// optional :tag ("python-3.12", "django:4.2"), no slash, at most 128 bytes.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(:[A-Za-z0-9._-]+)?$`) })

// CheckName says why name cannot name an image, or returns nil.
func CheckName(name string) error {
	if len(name) > 128 || !nameRE().MatchString(name) {
		return fmt.Errorf("image name %q: use lowercase letters, digits, '.', '_' and '-', optionally with a :tag, at most 128 bytes", name)
	}
	return nil
}

func (s *Store) namePath(name string) string { return filepath.Join(s.dir, "names", name) }

// setName points name at image id, replacing what it named (atomically).
func (s *Store) setName(name string, id v1.Hash) error {
	if err := CheckName(name); err != nil {
		return err
	}
	f, err := os.CreateTemp(s.tmpDir(), "name-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(id.String()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), s.namePath(name)); err != nil {
		return fmt.Errorf("name %s: %w", name, err)
	}
	return syncDir(filepath.Dir(s.namePath(name)))
}

// resolve returns the id of ref: an image name, or an image id ("sha256:<hex>").
func (s *Store) resolve(ref string) (v1.Hash, error) {
	if strings.HasPrefix(ref, "sha256:") {
		id, err := v1.NewHash(ref)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("image id %q: %w", ref, err)
		}
		if _, err := os.Stat(s.imageDir(id)); err != nil {
			return v1.Hash{}, fmt.Errorf("%w: %s", ErrNotFound, ref)
		}
		return id, nil
	}
	if err := CheckName(ref); err != nil {
		return v1.Hash{}, err
	}
	b, err := os.ReadFile(s.namePath(ref))
	if errors.Is(err, os.ErrNotExist) {
		return v1.Hash{}, fmt.Errorf("%w: %s", ErrNotFound, ref)
	}
	if err != nil {
		return v1.Hash{}, err
	}
	id, err := v1.NewHash(strings.TrimSpace(string(b)))
	if err != nil {
		return v1.Hash{}, fmt.Errorf("name %s: %w", ref, err)
	}
	return id, nil
}

// names returns every name and the image it names.
func (s *Store) names() (map[string]v1.Hash, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "names"))
	if err != nil {
		return nil, err
	}
	out := make(map[string]v1.Hash, len(ents))
	for _, e := range ents {
		if id, err := s.resolve(e.Name()); err == nil {
			out[e.Name()] = id
		}
	}
	return out, nil
}
