package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BuildOptions configure Build.
type BuildOptions struct {
	// Name, if set, names the image.
	Name string
	// Dir is where copy steps find their sources (the spec file's directory).
	Dir string
	// Runner runs the steps that run commands; without one they fail with
	// ErrNoRunner.
	Runner Runner
	// NoCache rebuilds every step (and re-bootstraps a Debian base).
	NoCache bool
	// Log, if set, gets one line per step.
	Log io.Writer
}

// Build makes the image of spec. Each step's result is a layer cached under
// sha256(parent key, step definition, inputs), the parent key of the first step
// being the base's (an image's id; a Debian base's own definition, itself cached;
// the host's package list) with the spec's env and workdir: a step whose
// definition, inputs (the files a copy step reads) or predecessors did not change
// is not run again, and a change rebuilds from that step on, as Modal's image
// builder does. The image's record keeps the spec, each step's key and layer, and
// the installed Debian packages.
func (s *Store) Build(ctx context.Context, spec *Spec, opts BuildOptions) (*Record, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	if opts.Name != "" {
		if err := CheckName(opts.Name); err != nil {
			return nil, err
		}
	}
	unlock, err := s.lock(shared)
	if err != nil {
		return nil, err
	}
	defer unlock()
	b := &builder{s: s, spec: spec, opts: opts}
	if err := b.base(ctx); err != nil {
		return nil, fmt.Errorf("build: base: %w", err)
	}
	b.cfg.Env = mergeEnv(b.cfg.Env, spec.Env)
	if spec.Workdir != "" {
		b.cfg.WorkingDir = spec.Workdir
	}
	b.key = hashJSON(struct {
		Base    string            `json:"base"`
		Env     map[string]string `json:"env,omitempty"`
		Workdir string            `json:"workdir,omitempty"`
	}{b.key, spec.Env, spec.Workdir})
	for i, st := range spec.Steps {
		if err := b.step(ctx, i, st); err != nil {
			return nil, fmt.Errorf("build: step %d (%s): %w", i+1, st, err)
		}
	}
	raw, err := newConfig(b.layers, b.cfg)
	if err != nil {
		return nil, err
	}
	dirs := s.layerDirs(b.layers)
	if b.host {
		// A host base's packages are the host's (apt steps are refused on it).
		dirs = append([]string{"/"}, dirs...)
	}
	r := &Record{Layers: b.layers, Host: b.host, Source: "build", Packages: packagesOf(dirs), Build: &b.rec}
	stored, err := s.writeImage(r, raw)
	if err != nil {
		return nil, err
	}
	if opts.Name != "" {
		if err := s.setName(opts.Name, stored.ID); err != nil {
			return nil, err
		}
	}
	// The store keeps the record of the build that made the image first; the
	// caller learns what this build did.
	out := *stored
	out.Build = &b.rec
	return &out, nil
}

// builder is one Build in progress.
type builder struct {
	s      *Store
	spec   *Spec
	opts   BuildOptions
	key    string // of the last step (or the base)
	layers []v1.Hash
	host   bool
	cfg    Config
	rec    BuildRecord
}

func (b *builder) logf(format string, args ...any) {
	if b.opts.Log != nil {
		fmt.Fprintf(b.opts.Log, format+"\n", args...)
	}
}

// base resolves the spec's base into layers, config and a key.
func (b *builder) base(ctx context.Context) error {
	b.rec.Spec = b.spec
	switch base := b.spec.Base; {
	case base.Image != "":
		var r *Record
		var raw []byte
		var err error
		if src, perr := ParseSource(base.Image); perr == nil {
			if r, err = b.s.importSource(ctx, src); err == nil {
				r, raw, err = b.s.readRecord(r.ID)
			}
		} else {
			var id v1.Hash
			if id, err = b.s.resolve(base.Image); err == nil {
				r, raw, err = b.s.readRecord(id)
			}
		}
		if err != nil {
			return err
		}
		if b.cfg, err = configOf(raw); err != nil {
			return err
		}
		b.layers, b.host, b.key = append([]v1.Hash(nil), r.Layers...), r.Host, hashJSON([]string{"image", r.ID.String()})
		b.rec.Base = base.Image + " = " + r.ID.String()
	case base.Debian != nil:
		d := base.Debian.withDefaults()
		b.key = hashJSON(struct {
			Kind   string `json:"kind"`
			Debian Debian `json:"debian"`
		}{"debian", d})
		layer, cached := b.cached(b.key)
		if !cached {
			li, err := b.s.mmdebstrap(ctx, d)
			if err != nil {
				return fmt.Errorf("%s: %w", d, err)
			}
			if err := b.s.cachePut(b.key, li.DiffID, d.String()); err != nil {
				return err
			}
			layer = li.DiffID
		}
		b.logf("base %s: layer %s (cached %v)", d, layer, cached)
		b.layers, b.cfg = []v1.Hash{layer}, Config{Env: []string{debianPath}}
		b.rec.Base, b.rec.BaseCached = d.String()+" = "+layer.String(), cached
	case base.Host:
		id, err := HostIdentity()
		if err != nil {
			return err
		}
		b.host, b.key, b.cfg = true, hashJSON([]string{"host", id}), Config{Env: []string{debianPath}}
		b.rec.Base = "host " + id
	}
	return nil
}

// cached looks key up unless the build ignores the cache.
func (b *builder) cached(key string) (v1.Hash, bool) {
	if b.opts.NoCache {
		return v1.Hash{}, false
	}
	return b.s.cacheGet(key)
}

// step runs (or finds in the cache) step i and stacks its layer.
func (b *builder) step(ctx context.Context, i int, st Step) error {
	if len(b.layers) >= b.s.lim.Layers {
		return &LimitError{What: fmt.Sprintf("the build has %d layers", len(b.layers)+1), Field: "Layers", Limit: int64(b.s.lim.Layers)}
	}
	var inputs string
	if st.Copy != nil {
		var err error
		if inputs, err = copyTar(ctx, b.opts.Dir, st.Copy, nil); err != nil {
			return err
		}
	}
	b.key = hashJSON(struct {
		Parent string `json:"parent"`
		Step   Step   `json:"step"`
		Inputs string `json:"inputs,omitempty"`
	}{b.key, st, inputs})
	layer, cached := b.cached(b.key)
	if !cached {
		var li LayerInfo
		var err error
		if st.Copy != nil {
			li, err = b.copyLayer(ctx, st.Copy, inputs)
		} else {
			li, err = b.runLayer(ctx, st)
		}
		if err != nil {
			return err
		}
		if err := b.s.cachePut(b.key, li.DiffID, st.String()); err != nil {
			return err
		}
		layer = li.DiffID
	}
	b.logf("step %d/%d %s: layer %s (cached %v)", i+1, len(b.spec.Steps), st, layer, cached)
	b.layers = append(b.layers, layer)
	b.rec.Steps = append(b.rec.Steps, StepRecord{Step: st.String(), Key: b.key, Layer: layer, Cached: cached, Inputs: inputs})
	return nil
}

// copyLayer makes the layer of a copy step; the files must still be what the
// key was computed from.
func (b *builder) copyLayer(ctx context.Context, c *Copy, inputs string) (LayerInfo, error) {
	var again string
	li, err := b.s.pipeLayer(ctx, func(w io.Writer) (err error) {
		again, err = copyTar(ctx, b.opts.Dir, c, w)
		return err
	})
	if err == nil && again != inputs {
		err = fmt.Errorf("the files changed while they were copied")
	}
	return li, err
}

// runLayer runs a step in the Runner's build sandbox and makes its upper
// directory a layer.
func (b *builder) runLayer(ctx context.Context, st Step) (LayerInfo, error) {
	if b.opts.Runner == nil {
		return LayerInfo{}, ErrNoRunner
	}
	tmp, err := os.MkdirTemp(b.s.tmpDir(), "step-")
	if err != nil {
		return LayerInfo{}, err
	}
	defer os.RemoveAll(tmp)
	// The build sandbox's init (IDBase on the host) walks down to upper and work.
	if err := os.Chmod(tmp, 0o711); err != nil {
		return LayerInfo{}, err
	}
	upper, work := filepath.Join(tmp, "upper"), filepath.Join(tmp, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return LayerInfo{}, err
		}
		if err := os.Chown(d, IDBase, IDBase); err != nil {
			return LayerInfo{}, err
		}
	}
	root := Root{Layers: b.s.layerDirs(b.layers), Host: b.host, Env: b.cfg.Env, WorkingDir: b.cfg.WorkingDir}
	if err := b.opts.Runner.RunStep(ctx, root, st, upper, work); err != nil {
		return LayerInfo{}, err
	}
	return b.s.pipeLayer(ctx, func(w io.Writer) error { return exportUpper(ctx, upper, w) })
}

// pipeLayer adds the layer archive write produces.
func (s *Store) pipeLayer(ctx context.Context, write func(io.Writer) error) (LayerInfo, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := write(pw)
		pw.CloseWithError(err)
		done <- err
	}()
	li, err := s.addLayer(ctx, pr)
	pr.CloseWithError(fmt.Errorf("layer not read to its end"))
	if werr := <-done; err == nil {
		err = werr
	}
	return li, err
}

// mergeEnv sets the variables of set in env (KEY=VALUE), replacing those there.
func mergeEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+set[k])
	}
	return out
}

// hashJSON is the hex sha256 of v's JSON: a cache key.
func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain data is hashed
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
