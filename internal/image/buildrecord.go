package image

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BuildRecord says what went into a built image, so the build can be audited and
// reproduced: the spec as given, what its base resolved to, and per step its
// cache key, its layer, and whether it came from the cache.
type BuildRecord struct {
	Spec *Spec  `json:"spec"`
	Base string `json:"base"`
	// BaseCached: a Debian base came from the build cache.
	BaseCached bool         `json:"base_cached,omitempty"`
	Steps      []StepRecord `json:"steps"`
}

// StepRecord is one step of a build.
type StepRecord struct {
	Step   string  `json:"step"`
	Key    string  `json:"key"`
	Layer  v1.Hash `json:"layer"`
	Cached bool    `json:"cached,omitempty"`
	// Inputs digests what the step read from outside the image (the files a copy
	// step copied in).
	Inputs string `json:"inputs,omitempty"`
}
