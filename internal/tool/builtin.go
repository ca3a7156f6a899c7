package tool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/workspace"
)

// BuiltinOptions configure the built-in tools of one session. Service, EnvID and
// Owner are required; zero limits take the defaults below.
type BuiltinOptions struct {
	Service Service
	Owner   env.Owner
	EnvID   string

	// TestCommand is the argv test.run executes from the workspace root. Empty:
	// test.run fails with EPRECONDITION.
	TestCommand []string
	// Env is added to the environment of exec.run and test.run commands, over the
	// sandbox's minimal one. It must never carry a credential: the sandbox runs
	// untrusted code.
	Env []string
	// TestTimeout and ExecTimeout bound one command (defaults 5m and 2m); a call
	// may ask exec.run for less, never more.
	TestTimeout time.Duration
	ExecTimeout time.Duration

	// MaxOutput caps each text that reaches the model (file content, a command's
	// stdout or stderr, search results); default 16 KiB.
	MaxOutput int
	// MaxCapture is how much of each command stream the sandbox keeps (head and
	// tail) for the artifact store; default 1 MiB.
	MaxCapture int64
	// Artifacts keeps clipped command output; default a new Store.
	Artifacts *Store
	// Network says the sandbox's egress lets commands reach some host, so a
	// registry's Gate judges the hosts exec.run and test.run name (OpenEnv sets
	// it for an environment with a network).
	Network bool
}

// Defaults of BuiltinOptions.
const (
	DefaultTestTimeout = 5 * time.Minute
	DefaultExecTimeout = 2 * time.Minute
	DefaultMaxOutput   = 16 << 10
	DefaultMaxCapture  = 1 << 20
)

func (o BuiltinOptions) withDefaults() BuiltinOptions {
	if o.TestTimeout <= 0 {
		o.TestTimeout = DefaultTestTimeout
	}
	if o.ExecTimeout <= 0 {
		o.ExecTimeout = DefaultExecTimeout
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.MaxCapture <= 0 {
		o.MaxCapture = DefaultMaxCapture
	}
	if o.Artifacts == nil {
		o.Artifacts = NewStore(0)
	}
	return o
}

// Workspace is the built-in tools' view of the environment they act on: the
// handles to reach it, and what the session has done to it (its version, the
// last test run, whether the task was finished). It implements World.
type Workspace struct {
	o BuiltinOptions

	mu       sync.Mutex
	version  string
	writes   int
	bumps    int // fallback versions when the diff cannot be read
	lastTest *TestRecord
	finished bool
}

// RegisterBuiltins registers fs.read, fs.list, fs.search, fs.write, fs.remove,
// patch.apply, exec.run, test.run, task.finish and artifact.read in r, all acting on one
// environment, and sets the returned Workspace as r's world.
func RegisterBuiltins(ctx context.Context, r *Registry, o BuiltinOptions) (*Workspace, error) {
	if o.Service == nil || o.EnvID == "" {
		return nil, fmt.Errorf("%w: built-in tools need an environment service and id", ErrRegister)
	}
	w := &Workspace{o: o.withDefaults()}
	w.version = w.diffVersion(ctx)
	for _, s := range w.specs() {
		if err := r.Register(s); err != nil {
			return nil, err
		}
	}
	r.SetWorld(w)
	return w, nil
}

func (w *Workspace) specs() []Spec {
	return []Spec{w.fsRead(), w.fsList(), w.fsSearch(), w.fsWrite(), w.fsRemove(), w.patchApply(),
		w.execRun(), w.testRun(), w.taskFinish(), w.artifactRead()}
}

// BuiltinNames are the names of the built-in tools and http.fetch: names no MCP
// server may take.
func BuiltinNames() []string {
	var out []string
	for _, s := range (&Workspace{}).specs() {
		out = append(out, s.Name)
	}
	return append(out, "http.fetch")
}

// Snapshot implements World.
func (w *Workspace) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Snapshot{Version: w.version, Writes: w.writes, Finished: w.finished}
	if w.lastTest != nil {
		t := *w.lastTest
		s.Tests = &t
	}
	return s
}

// changed records a call that may have changed the workspace and recomputes the
// version from the environment's diff, so a write that changes nothing (or an
// exec that writes nothing) keeps the version and a loop is still seen as one.
func (w *Workspace) changed(ctx context.Context) {
	w.mu.Lock()
	w.writes++
	w.mu.Unlock()
	w.refresh(ctx)
}

// refresh recomputes the version without counting a write.
func (w *Workspace) refresh(ctx context.Context) {
	v := w.diffVersion(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if v == "" {
		w.bumps++
		v = fmt.Sprintf("unknown-%d", w.bumps)
	}
	w.version = v
}

// diffVersion hashes the environment's diff against its starting content; "" if
// the diff cannot be read (environment gone) or was cut at a limit, where a hash
// would miss the changes past the cut.
func (w *Workspace) diffVersion(ctx context.Context) string {
	d, err := w.o.Service.Diff(ctx, w.o.Owner, w.o.EnvID)
	if err != nil || workspace.Truncated(d) {
		return ""
	}
	sum := sha256.Sum256(d)
	return "d:" + hex.EncodeToString(sum[:8])
}

// exportRef exports a workspace file as an environment artifact.
func (w *Workspace) exportRef(ctx context.Context, path string) []Ref {
	a, err := w.o.Service.Export(ctx, w.o.Owner, w.o.EnvID, path)
	if err != nil {
		return nil
	}
	return []Ref{{Ref: a.Ref, Size: a.Size, Name: path, Source: "file:" + path, Store: "environment"}}
}

// clipStore clips text for the model and, if it was cut, keeps the whole in the
// artifact store.
func (w *Workspace) clipStore(text, name, source string) (Clipped, []Ref) {
	c := Clip(text, w.o.MaxOutput)
	if !c.Truncated {
		return c, nil
	}
	if ref, ok := w.o.Artifacts.Put([]byte(text), name, source); ok {
		return c, []Ref{ref}
	}
	return c, nil
}

func isBinary(b []byte) bool {
	n := min(len(b), 8000)
	return strings.IndexByte(string(b[:n]), 0) >= 0
}
