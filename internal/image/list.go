package image

import (
	"fmt"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Summary is one named image in List.
type Summary struct {
	Name    string    `json:"name"`
	ID      v1.Hash   `json:"id"`
	Layers  int       `json:"layers"`
	Bytes   int64     `json:"bytes"`
	Source  string    `json:"source"`
	Created time.Time `json:"created"`
}

// List returns the named images, by name.
func (s *Store) List() ([]Summary, error) {
	unlock, err := s.lock(shared)
	if err != nil {
		return nil, err
	}
	defer unlock()
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	var out []Summary
	for n, id := range names {
		r, _, err := s.readRecord(id)
		if err != nil {
			return nil, fmt.Errorf("name %s: %w", n, err)
		}
		sum := Summary{Name: n, ID: id, Layers: len(r.Layers), Source: r.Source, Created: r.Created}
		for _, l := range r.Layers {
			li, _ := s.layerInfo(l)
			sum.Bytes += li.Bytes
		}
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Info is everything the store knows of one image.
type Info struct {
	Record
	Names  []string    `json:"names,omitempty"`
	Config Config      `json:"config"`
	Layers []LayerInfo `json:"layer_info"`
}

// Inspect describes image ref (a name or an id).
func (s *Store) Inspect(ref string) (*Info, error) {
	unlock, err := s.lock(shared)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id, err := s.resolve(ref)
	if err != nil {
		return nil, err
	}
	r, raw, err := s.readRecord(id)
	if err != nil {
		return nil, err
	}
	cfg, err := configOf(raw)
	if err != nil {
		return nil, err
	}
	info := &Info{Record: *r, Config: cfg}
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	for n, nid := range names {
		if nid == id {
			info.Names = append(info.Names, n)
		}
	}
	sort.Strings(info.Names)
	for _, l := range r.Layers {
		li, err := s.layerInfo(l)
		if err != nil {
			return nil, err
		}
		info.Layers = append(info.Layers, li)
	}
	return info, nil
}
