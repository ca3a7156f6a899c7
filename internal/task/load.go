package task

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/quantity"
)

// FileName is the name of the task description inside a task directory.
const FileName = "task.yaml"

const (
	maxTaskFile  = 1 << 20
	maxStatement = 64 << 10
	maxTitle     = 200
	maxID        = 64
	maxTestID    = 1024
	maxTimeout   = 24 * time.Hour
)

var idRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]+$`) })

// file mirrors task.yaml. Numbers in limits are strings so that a YAML float is
// rejected instead of silently truncated. PublicTestCommand is nil when task.yaml
// leaves it out (or gives null) and empty for an explicit [], which is rejected.
type file struct {
	ID                string         `yaml:"id"`
	Title             string         `yaml:"title"`
	Statement         string         `yaml:"statement"`
	Language          string         `yaml:"language"`
	PublicTests       []string       `yaml:"public_tests"`
	HiddenTests       *string        `yaml:"hidden_tests"`
	Protected         []string       `yaml:"protected"`
	Setup             []string       `yaml:"setup"`
	Network           *fileNetwork   `yaml:"network"`
	Environment       yaml.Node      `yaml:"environment"`
	TestCommand       []string       `yaml:"test_command"`
	Env               []string       `yaml:"env"`
	PublicTestCommand []string       `yaml:"public_test_command"`
	ResultFormat      string         `yaml:"result_format"`
	FailToPass        []string       `yaml:"fail_to_pass"`
	PassToPass        []string       `yaml:"pass_to_pass"`
	Limits            *fileLimits    `yaml:"limits"`
	Reference         string         `yaml:"reference"`
	Metadata          map[string]any `yaml:"metadata"`
}

type fileNetwork struct {
	Allow        []string          `yaml:"allow"`
	AllowPrivate []string          `yaml:"allow_private"`
	DNSOverride  map[string]string `yaml:"dns_override"`
}

// network checks task.yaml's network and that it has a setup to serve.
func (l *loader) network(t *Task, n *fileNetwork) error {
	if n == nil {
		return nil
	}
	if len(t.Setup) == 0 {
		return l.errf("network", "network is what setup may reach, and there is no setup; give setup or leave network out")
	}
	p := &egress.Policy{Allow: n.Allow}
	for _, c := range n.AllowPrivate {
		pfx, err := netip.ParsePrefix(c)
		if err != nil {
			return l.errf("network", "allow_private %q: want a CIDR prefix such as 10.1.0.0/16", c)
		}
		p.AllowPrivate = append(p.AllowPrivate, pfx)
	}
	for name, ip := range n.DNSOverride {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return l.errf("network", "dns_override %s: %q is not an IP address", name, ip)
		}
		if p.DNSOverride == nil {
			p.DNSOverride = map[string]netip.Addr{}
		}
		p.DNSOverride[name] = a
	}
	if err := p.Validate(); err != nil {
		return l.errf("network", "%v", err)
	}
	t.Network = p
	return nil
}

type fileLimits struct {
	Timeout string `yaml:"timeout,omitempty"`
	Memory  string `yaml:"memory,omitempty"`
	Pids    string `yaml:"pids,omitempty"`
}

// Load reads and validates the task directory dir. Every problem is an *Error that
// names the file, the field and what to do; nothing in dir is modified.
func Load(dir string) (*Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &Error{File: dir, Err: err}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, &Error{File: dir, Err: fmt.Errorf("cannot open the task directory: %w", err)}
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, &Error{File: dir, Err: errors.New("not a directory")}
	}
	data, err := readRegular(filepath.Join(real, FileName), maxTaskFile)
	if err != nil {
		return nil, &Error{File: filepath.Join(dir, FileName), Err: err}
	}
	return load(real, data)
}

// load validates data as the task.yaml of the directory dir (absolute, no symlinks).
func load(dir string, data []byte) (*Task, error) {
	l := &loader{dir: dir, yamlPath: filepath.Join(dir, FileName)}
	f, err := decode(data)
	if err != nil {
		return nil, l.errf("", "%v", err)
	}
	t, err := l.fields(f)
	if err != nil {
		return nil, err
	}
	if err := l.trees(t); err != nil {
		return nil, err
	}
	if err := l.reference(t); err != nil {
		return nil, err
	}
	return t, nil
}

func decode(data []byte) (f *file, err error) {
	// yaml.v3 reports errors by panicking internally and recovering; this recover
	// keeps a panic it misses from escaping a loader of untrusted input.
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("cannot parse YAML: %v", r)
		}
	}()
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	f = new(file)
	if err := dec.Decode(f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file; see the task package documentation for the fields")
		}
		return nil, fmt.Errorf("%w (unknown fields are rejected; check spelling and indentation)", err)
	}
	var rest yaml.Node
	if err := dec.Decode(&rest); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document; keep one task per file")
	}
	return f, nil
}

type loader struct {
	dir      string
	yamlPath string
}

func (l *loader) errf(field, format string, args ...any) error {
	return &Error{File: l.yamlPath, Field: field, Err: fmt.Errorf(format, args...)}
}

func (l *loader) fields(f *file) (*Task, error) {
	t := &Task{Dir: l.dir, Metadata: f.Metadata}
	if err := checkID(f.ID); err != nil {
		return nil, l.errf("id", "%v", err)
	}
	t.ID = f.ID
	if err := l.environment(t, &f.Environment); err != nil {
		return nil, err
	}
	t.Title = strings.TrimSpace(f.Title)
	switch {
	case t.Title == "":
		return nil, l.errf("title", "missing; give a one-line summary")
	case strings.ContainsAny(t.Title, "\n\r") || utf8.RuneCountInString(t.Title) > maxTitle:
		return nil, l.errf("title", "must be one line of at most %d characters", maxTitle)
	}
	t.Statement = f.Statement
	switch {
	case strings.TrimSpace(f.Statement) == "":
		return nil, l.errf("statement", "missing; say what is wrong, what behaviour is wanted and which files to edit")
	case len(f.Statement) > maxStatement:
		return nil, l.errf("statement", "longer than %d bytes", maxStatement)
	case strings.ContainsRune(f.Statement, 0):
		return nil, l.errf("statement", "contains a NUL byte")
	}
	switch t.Language = Language(f.Language); t.Language {
	case Python, Go, Node:
	case "":
		return nil, l.errf("language", "missing; use python, go or node")
	default:
		return nil, l.errf("language", "unknown language %q; use python, go or node", f.Language)
	}
	if err := checkFormat(t.Language, ResultFormat(f.ResultFormat)); err != nil {
		return nil, l.errf("result_format", "%v", err)
	}
	t.ResultFormat = ResultFormat(f.ResultFormat)
	if err := checkArgv(f.TestCommand); err != nil {
		return nil, l.errf("test_command", "%v; give the argv list run from the repository root, e.g. [python3, -m, unittest]", err)
	}
	t.TestCommand = f.TestCommand
	t.PublicTestCommand = DefaultPublicTestCommand(t.Language)
	if f.PublicTestCommand != nil {
		if err := checkArgv(f.PublicTestCommand); err != nil {
			return nil, l.errf("public_test_command", "%v; give the argv list the agent runs from the repository root to see the public tests, e.g. [python3, -m, unittest, -v], or leave it out for the default", err)
		}
		t.PublicTestCommand = f.PublicTestCommand
	}
	if len(f.Setup) > 0 {
		if err := checkArgv(f.Setup); err != nil {
			return nil, l.errf("setup", "%v; give an argv list or leave setup out", err)
		}
		t.Setup = f.Setup
	}
	if err := l.network(t, f.Network); err != nil {
		return nil, err
	}
	for i, kv := range f.Env {
		if err := checkEnvVar(kv); err != nil {
			return nil, l.errf(fmt.Sprintf("env[%d]", i), "%v", err)
		}
	}
	t.Environ = f.Env
	if err := l.testIDs(t, f); err != nil {
		return nil, err
	}
	if err := l.limits(t, f.Limits); err != nil {
		return nil, err
	}
	for i, g := range f.PublicTests {
		if _, err := compileGlob(g); err != nil {
			return nil, l.errf(fmt.Sprintf("public_tests[%d]", i), "%v", err)
		}
	}
	t.PublicTests = f.PublicTests
	for i, g := range f.Protected {
		if _, err := compileGlob(g); err != nil {
			return nil, l.errf(fmt.Sprintf("protected[%d]", i), "%v", err)
		}
	}
	t.ProtectedGlobs = append(append(DefaultProtected(), f.PublicTests...), f.Protected...)

	hidden := "hidden"
	if f.HiddenTests != nil {
		hidden = *f.HiddenTests
	}
	var err error
	if t.Hidden, err = l.localPath("hidden_tests", hidden); err != nil {
		return nil, err
	}
	if f.Reference == "" {
		return nil, l.errf("reference", "missing; name a patch next to task.yaml that resolves the task, e.g. solution.patch")
	}
	if t.Reference, err = l.localPath("reference", f.Reference); err != nil {
		return nil, err
	}
	t.Repo = filepath.Join(l.dir, "repo")
	switch {
	case within(t.Hidden, t.Repo) || within(t.Repo, t.Hidden):
		return nil, l.errf("hidden_tests", "must not overlap repo/: the agent would see the hidden tests")
	case within(t.Reference, t.Repo):
		return nil, l.errf("reference", "must not be inside repo/: the agent would see the solution")
	case within(t.Reference, t.Hidden):
		return nil, l.errf("reference", "must not be inside the hidden tests directory: it would be copied into the repository")
	}
	return t, nil
}

func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("missing; use letters, digits, '_', '.' and '-'")
	case len(id) > maxID:
		return fmt.Errorf("longer than %d characters", maxID)
	case !idRE().MatchString(id) || id == "." || id == "..":
		return fmt.Errorf("%q: use only letters, digits, '_', '.' and '-' (and not just dots)", id)
	}
	return nil
}

// checkFormat checks that a result format exists and suits the language.
func checkFormat(lang Language, format ResultFormat) error {
	switch format {
	case JUnit, TAP, ExitCode:
	case GoTestJSON:
		if lang != Go {
			return errors.New("go-test-json needs language go")
		}
	case Unittest:
		if lang != Python {
			return errors.New("unittest needs language python")
		}
	case "":
		return errors.New("missing; use junit, go-test-json, unittest, tap or exit-code")
	default:
		return fmt.Errorf("unknown format %q; use junit, go-test-json, unittest, tap or exit-code", format)
	}
	return nil
}

// reservedEnv are the variables the grader sets itself.
var reservedEnv = []string{"PATH", EnvResults, EnvNonce}

// checkEnvVar checks one KEY=VALUE of a task's env.
func checkEnvVar(kv string) error {
	k, _, ok := strings.Cut(kv, "=")
	switch {
	case !ok || k == "" || strings.ContainsAny(k, " \t\n") || strings.ContainsRune(kv, 0):
		return fmt.Errorf("%q: use KEY=VALUE, e.g. PYTHONPATH=src", kv)
	case slices.Contains(reservedEnv, k) || strings.HasPrefix(k, "AGENTBOX_"):
		return fmt.Errorf("%s is set by the grader; a task cannot set it", k)
	}
	return nil
}

func checkArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("missing or empty program")
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("argument %d contains a NUL byte", i)
		}
	}
	return nil
}

func (l *loader) limits(t *Task, fl *fileLimits) error {
	t.Limits = Limits{Timeout: DefaultTimeout, Memory: DefaultMemory, Pids: DefaultPids}
	if fl == nil {
		return nil
	}
	if fl.Timeout != "" {
		d, err := time.ParseDuration(fl.Timeout)
		if err != nil || d <= 0 || d > maxTimeout {
			return l.errf("limits.timeout", "%q: use a positive duration up to 24h such as 90s or 5m", fl.Timeout)
		}
		t.Limits.Timeout = d
	}
	if fl.Memory != "" {
		n, err := quantity.ParseSize(fl.Memory)
		if err != nil || n < 1<<20 {
			return l.errf("limits.memory", "%q: use a size of at least 1M such as 512M or 2G", fl.Memory)
		}
		t.Limits.Memory = n
	}
	if fl.Pids != "" {
		n, err := quantity.ParseCount(fl.Pids)
		if err != nil || n < 1 {
			return l.errf("limits.pids", "%q: use a whole number of at least 1", fl.Pids)
		}
		t.Limits.Pids = n
	}
	return nil
}
