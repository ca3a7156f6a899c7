package image

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Spec is a build spec (`agentbox template build -f spec.yaml`): a base, then
// steps, each cached by its parent and its definition (see Build).
//
//	base:
//	  debian: bookworm            # or {suite, variant, include, mirror, source_date_epoch}
//	  # image: NAME or SOURCE      (an image in the store, or docker-archive:FILE, registry:REF, ...)
//	  # host: true                 (the host's system directories)
//	steps:
//	  - apt: [python3, python3-pytest]
//	  - npm: [typescript@5.4.5]
//	  - go_modules: [golang.org/x/text@v0.14.0]
//	  - copy: {src: requirements.txt, dst: /opt/app/requirements.txt}
//	  - run: pip install -r /opt/app/requirements.txt
//	env: {PYTHONDONTWRITEBYTECODE: "1"}
//	workdir: /workspace
type Spec struct {
	Base  Base   `yaml:"base" json:"base"`
	Steps []Step `yaml:"steps,omitempty" json:"steps,omitempty"`
	// Env is set for every step and in the image.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Workdir is the image's working directory (absolute).
	Workdir string `yaml:"workdir,omitempty" json:"workdir,omitempty"`
}

// Base is what a build starts from: exactly one field is set.
type Base struct {
	// Image is an image in the store (name or id) or a source (ParseSource).
	Image  string  `yaml:"image,omitempty" json:"image,omitempty"`
	Debian *Debian `yaml:"debian,omitempty" json:"debian,omitempty"`
	// Host: the host's system directories, with the steps' layers over them.
	Host bool `yaml:"host,omitempty" json:"host,omitempty"`
}

// Step is one build step: exactly one field is set.
type Step struct {
	// Apt installs Debian packages ("name" or "name=version").
	Apt []string `yaml:"apt,omitempty" json:"apt,omitempty"`
	// Npm installs npm packages globally, each pinned ("name@1.2.3").
	Npm []string `yaml:"npm,omitempty" json:"npm,omitempty"`
	// GoModules downloads Go modules into the module cache ("path@v1.2.3").
	GoModules []string `yaml:"go_modules,omitempty" json:"go_modules,omitempty"`
	// Copy copies a file or directory of the spec's directory into the image.
	Copy *Copy `yaml:"copy,omitempty" json:"copy,omitempty"`
	// Run runs a shell command.
	Run string `yaml:"run,omitempty" json:"run,omitempty"`
}

// Copy is a copy step: Src relative to the spec's directory, Dst absolute.
type Copy struct {
	Src string `yaml:"src" json:"src"`
	Dst string `yaml:"dst" json:"dst"`
}

// Kinds of step.
const (
	StepApt       = "apt"
	StepNpm       = "npm"
	StepGoModules = "go_modules"
	StepCopy      = "copy"
	StepRun       = "run"
)

// Kind names the step's kind ("" if none or several fields are set).
func (st Step) Kind() string {
	var kinds []string
	if len(st.Apt) > 0 {
		kinds = append(kinds, StepApt)
	}
	if len(st.Npm) > 0 {
		kinds = append(kinds, StepNpm)
	}
	if len(st.GoModules) > 0 {
		kinds = append(kinds, StepGoModules)
	}
	if st.Copy != nil {
		kinds = append(kinds, StepCopy)
	}
	if st.Run != "" {
		kinds = append(kinds, StepRun)
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

// String describes the step in one line.
func (st Step) String() string {
	switch st.Kind() {
	case StepApt:
		return "apt: " + strings.Join(st.Apt, " ")
	case StepNpm:
		return "npm: " + strings.Join(st.Npm, " ")
	case StepGoModules:
		return "go_modules: " + strings.Join(st.GoModules, " ")
	case StepCopy:
		return "copy: " + st.Copy.Src + " -> " + st.Copy.Dst
	case StepRun:
		return "run: " + st.Run
	}
	return "(invalid step)"
}

// ParseSpec reads a build spec (YAML; unknown fields are errors) and checks it.
func ParseSpec(data []byte) (spec *Spec, err error) {
	// yaml.v3 reports errors by panicking and recovering internally; this keeps
	// one it misses from escaping.
	defer func() {
		if r := recover(); r != nil {
			spec, err = nil, fmt.Errorf("build spec: cannot parse YAML: %v", r)
		}
	}()
	if !utf8.Valid(data) {
		return nil, errors.New("build spec: not valid UTF-8")
	}
	spec = new(Spec)
	if err := strictYAML(data, spec); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("build spec: empty; it needs at least a base")
		}
		return nil, fmt.Errorf("build spec: %w (unknown fields are rejected; check spelling and indentation)", err)
	}
	if err := spec.Check(); err != nil {
		return nil, err
	}
	return spec, nil
}

func strictYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// UnmarshalYAML takes a suite name ("bookworm") or the whole mapping, checking
// the mapping's fields as strictly as the rest of the spec.
func (d *Debian) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*d = Debian{Suite: n.Value}
		return nil
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	type plain Debian
	return strictYAML(b, (*plain)(d))
}

var (
	npmRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*@[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	})
	goModRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*\.[a-z]{2,}(/[A-Za-z0-9._~-]+)*@v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+incompatible)?$`)
	})
	envRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// Check says everything that is wrong with the spec, each problem named by its
// field, or returns nil.
func (sp *Spec) Check() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("build spec: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	b := sp.Base
	switch n := btoi(b.Image != "") + btoi(b.Debian != nil) + btoi(b.Host); {
	case n == 0:
		bad("base", "missing: set image, debian or host")
	case n > 1:
		bad("base", "set only one of image, debian and host")
	case b.Image != "":
		if !isSource(b.Image) && !strings.HasPrefix(b.Image, "sha256:") {
			if err := CheckName(b.Image); err != nil {
				bad("base.image", "%v; or give a source such as docker-archive:FILE or registry:REF", err)
			}
		}
	case b.Debian != nil:
		if err := b.Debian.Check(); err != nil {
			bad("base.debian", "%v", err)
		}
	}
	for i, st := range sp.Steps {
		f := fmt.Sprintf("steps[%d]", i)
		switch st.Kind() {
		case "":
			bad(f, "set exactly one of apt, npm, go_modules, copy and run")
		case StepApt:
			if b.Host {
				bad(f+".apt", "a host base holds the host's /usr but not its package database: install the packages on the host (the build's cache key follows them), or start from a Debian base")
			}
			for j, p := range st.Apt {
				if err := checkPackage(p); err != nil {
					bad(fmt.Sprintf("%s.apt[%d]", f, j), "%v", err)
				}
			}
		case StepNpm:
			for j, p := range st.Npm {
				if !npmRE().MatchString(p) {
					bad(fmt.Sprintf("%s.npm[%d]", f, j), "%q: want name@version with an exact version (left-pad@1.3.0), so the build is reproducible", p)
				}
			}
		case StepGoModules:
			for j, m := range st.GoModules {
				if !goModRE().MatchString(m) {
					bad(fmt.Sprintf("%s.go_modules[%d]", f, j), "%q: want module@version with an exact version (golang.org/x/text@v0.14.0)", m)
				}
			}
		case StepCopy:
			if c, err := cleanName(st.Copy.Src); err != nil || c == "" || path.IsAbs(st.Copy.Src) {
				bad(f+".copy.src", "%q: want a path inside the spec's directory", st.Copy.Src)
			}
			if c, err := cleanName(st.Copy.Dst); err != nil || c == "" || !path.IsAbs(st.Copy.Dst) {
				bad(f+".copy.dst", "%q: want an absolute path in the image other than /", st.Copy.Dst)
			}
		case StepRun:
			if strings.IndexByte(st.Run, 0) >= 0 {
				bad(f+".run", "holds a NUL byte")
			}
		}
	}
	keys := make([]string, 0, len(sp.Env))
	for k := range sp.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !envRE().MatchString(k) || strings.IndexByte(sp.Env[k], 0) >= 0 {
			bad("env."+k, "want a name of letters, digits and _ and a value without NUL")
		}
	}
	if sp.Workdir != "" && (!path.IsAbs(sp.Workdir) || path.Clean(sp.Workdir) != sp.Workdir) {
		bad("workdir", "%q: want a clean absolute path", sp.Workdir)
	}
	return errors.Join(errs...)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
