package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/agentbox/agentbox/internal/policy"
	"github.com/google/jsonschema-go/jsonschema"
)

// Scopes of the built-in tools. A registry grants a set of them; tools outside it
// are neither offered nor run.
const (
	ScopeRead   = "workspace:read"  // fs.read, fs.list, fs.search, artifact.read
	ScopeWrite  = "workspace:write" // fs.write, fs.remove, patch.apply
	ScopeExec   = "exec"            // exec.run: any command in the sandbox
	ScopeTest   = "exec:test"       // test.run: only the configured test command
	ScopeFinish = "task:finish"     // task.finish
)

// BuiltinScopes grants every built-in tool.
var BuiltinScopes = []string{ScopeRead, ScopeWrite, ScopeExec, ScopeTest, ScopeFinish}

// Call is one request to run a tool.
type Call struct {
	ID   string          `json:"id"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// World is the state the tools share, if any (the built-in tools' Workspace).
type World interface {
	Snapshot() Snapshot
}

// Snapshot is what the trace records of the world after each step, and what the
// loop fingerprints.
type Snapshot struct {
	// Version changes whenever the workspace content changes.
	Version string `json:"version"`
	// Writes counts the calls that could have changed the workspace.
	Writes int         `json:"writes"`
	Tests  *TestRecord `json:"tests,omitempty"`
	// Finished is set once task.finish succeeded.
	Finished bool `json:"finished,omitempty"`
}

// TestRecord is the last test.run.
type TestRecord struct {
	Passed   bool   `json:"passed"`
	ExitCode int    `json:"exit_code"`
	Version  string `json:"version"` // the workspace version the tests saw
}

// Options configure a Registry. The zero value grants nothing.
type Options struct {
	// Scopes are the authorisations granted. A tool whose scope is not among them
	// is not offered (Defs) and a call to it is EPERM.
	Scopes []string
	// Clock stamps envelopes; default time.Now.
	Clock func() time.Time
	// Gate, if set, decides every call before its precondition (allow, ask a
	// person, deny) and observes every result.
	Gate Gate
}

// Registry holds the tools of a session and runs calls to them. It is safe for
// concurrent use.
type Registry struct {
	grants map[string]bool
	clock  func() time.Time
	gate   Gate

	mu    sync.RWMutex
	tools map[string]*entry
	order []string
	world World
}

type entry struct {
	spec Spec
	in   *jsonschema.Resolved
}

// NewRegistry returns an empty registry.
func NewRegistry(o Options) *Registry {
	r := &Registry{grants: map[string]bool{}, clock: o.Clock, gate: o.Gate, tools: map[string]*entry{}}
	if r.clock == nil {
		r.clock = time.Now
	}
	for _, s := range o.Scopes {
		r.grants[s] = true
	}
	return r
}

// WithGate returns a registry with r's scopes, world and tools but those named
// in drop, whose calls g decides: a subagent's view of its parent's
// environment, under its own permissions. Tools registered on either later are
// not seen by the other.
func (r *Registry) WithGate(g Gate, drop ...string) *Registry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := &Registry{grants: r.grants, clock: r.clock, gate: g, tools: map[string]*entry{}, world: r.world}
	for _, name := range r.order {
		if !slices.Contains(drop, name) {
			c.tools[name] = r.tools[name]
			c.order = append(c.order, name)
		}
	}
	return c
}

// nameRE is the MCP and agentbox tool name syntax (dots allowed; the model
// adapters map them to what each protocol accepts).
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`) })

// ErrRegister is matched by every Register error.
var ErrRegister = errors.New("tool: cannot register")

// Register adds a tool. The name must be new and valid, the scope and handler set,
// and the schemas valid objects.
func (r *Registry) Register(s Spec) error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w %q: %s", ErrRegister, s.Name, fmt.Sprintf(f, a...))
	}
	switch {
	case !nameRE().MatchString(s.Name):
		return bad("name must match %s", nameRE())
	case s.Handler == nil:
		return bad("no handler")
	case s.Scope == "":
		return bad("no scope")
	}
	switch s.Effect {
	case EffectRead, EffectWrite, EffectExec, EffectNetwork, EffectControl:
	default:
		return bad("unknown effect %q", s.Effect)
	}
	in, err := compile(s.InputSchema)
	if err != nil {
		return bad("input schema: %v", err)
	}
	if s.InputSchema == nil {
		s.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if s.OutputSchema != nil {
		if _, err := compile(s.OutputSchema); err != nil {
			return bad("output schema: %v", err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[s.Name]; dup {
		return bad("already registered")
	}
	r.tools[s.Name] = &entry{spec: s, in: in}
	r.order = append(r.order, s.Name)
	return nil
}

// SetWorld sets the shared state Snapshot reports.
func (r *Registry) SetWorld(w World) {
	r.mu.Lock()
	r.world = w
	r.mu.Unlock()
}

// Snapshot returns the world's snapshot, or the zero Snapshot.
func (r *Registry) Snapshot() Snapshot {
	r.mu.RLock()
	w := r.world
	r.mu.RUnlock()
	if w == nil {
		return Snapshot{}
	}
	return w.Snapshot()
}

// Defs lists the granted tools in registration order, as offered to a model.
func (r *Registry) Defs() []Def {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Def
	for _, n := range r.order {
		if s := r.tools[n].spec; r.grants[s.Scope] {
			out = append(out, s.Def())
		}
	}
	return out
}

// Spec returns a registered tool's Spec.
func (r *Registry) Spec(name string) (Spec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return Spec{}, false
	}
	return e.spec, true
}

// Call runs one call: scope, schema, the gate, precondition, charge, handler, in
// that order; the first that fails decides the envelope. The gate's deny is EPERM
// with its reason, its ask EASK with the Verdict in the Outcome. charge, if not nil, is asked to pay the
// tool's declared cost just before the handler runs; its refusal is EBUDGET. Call
// never panics and always returns an envelope.
func (r *Registry) Call(ctx context.Context, c Call, charge func(Cost) error) (out Outcome) {
	start := time.Now()
	defer func() { out.Duration = time.Since(start) }()
	r.mu.RLock()
	e, ok := r.tools[c.Tool]
	r.mu.RUnlock()
	if !ok || !r.grants[e.spec.Scope] {
		// An ungranted tool is not offered: to the caller it does not exist, but
		// say so differently, so a trace shows a policy denial for what it is.
		if ok {
			out.Effect = e.spec.Effect
			out.Envelope = failure(Errorf(EPERM, false, ActStop, "tool %q needs scope %q, which this session was not granted", c.Tool, e.spec.Scope), r.clock())
			return out
		}
		out.Envelope = failure(Errorf(ENOTOOL, false, ActUseTool, "no tool named %q; the tools are: %s", c.Tool, r.names()), r.clock())
		return out
	}
	s := e.spec
	out.Effect = s.Effect
	args, verr := checkArgs(e.in, c.Args)
	if verr != nil {
		out.Envelope = failure(verr, r.clock())
		return out
	}
	var act policy.Action
	if r.gate != nil {
		a, err := s.action(ctx, args)
		if err != nil {
			te, _ := FromErr(err)
			if te.Code == EINTERNAL {
				te = &Error{Code: EPRECONDITION, Message: err.Error(), SuggestedAction: ActFixArgs, err: err}
			}
			out.Envelope = failure(te, r.clock())
			return out
		}
		v := r.gate.Decide(ctx, c, a)
		out.Verdict, act = &v, a
		switch v.Decision {
		case policy.Deny:
			out.Envelope = failure(Errorf(EPERM, false, ActStop, "refused by the permission policy: %s", v.Reason()), r.clock())
			return out
		case policy.Ask:
			out.Envelope = failure(Errorf(EASK, false, ActNone, "needs a person's approval: %s", v.Reason()), r.clock())
			return out
		case policy.Allow:
		default:
			out.Envelope = failure(Errorf(EPERM, false, ActStop, "the permission policy gave no decision"), r.clock())
			return out
		}
	}
	if r.gate != nil {
		defer func() { r.gate.Observe(c, act, *out.Verdict, out.Envelope) }()
	}
	res, internal, err := r.run(ctx, s, args, charge)
	o := r.outcome(s, res, internal, err)
	out.Envelope, out.Internal, out.Done = o.Envelope, o.Internal, o.Done
	return out
}

// outcome is the envelope of a handler's result or error.
func (r *Registry) outcome(s Spec, res Result, internal string, err error) (out Outcome) {
	out.Effect = s.Effect
	if err != nil {
		te, known := FromErr(err)
		if !known {
			internal = err.Error()
		}
		out.Envelope, out.Internal = failure(te, r.clock()), internal
		out.Envelope.Cost = costIfRun(s, err)
		return out
	}
	data, merr := json.Marshal(res.Data)
	if merr != nil {
		out.Envelope = failure(Errorf(EINTERNAL, false, ActStop, "internal error"), r.clock())
		out.Internal = "marshal result: " + merr.Error()
		return out
	}
	refs := res.Refs
	if refs == nil {
		refs = []Ref{}
	}
	out.Envelope = Envelope{OK: true, Data: data, Text: res.Text, Refs: refs, Cost: s.Cost,
		ObservedAt: r.clock(), Source: res.Source, Truncated: res.Truncated}
	out.Done = res.Done && s.Effect == EffectControl
	return out
}

// Judge returns what the gate would decide of a call now, running nothing and
// recording nothing (the loop's look at a policy's queued calls); false for a
// call Call would refuse before the gate (no such tool, an ungranted scope, bad
// arguments) or a registry without a gate.
func (r *Registry) Judge(ctx context.Context, c Call) (policy.Verdict, bool) {
	r.mu.RLock()
	e, ok := r.tools[c.Tool]
	r.mu.RUnlock()
	if !ok || !r.grants[e.spec.Scope] || r.gate == nil {
		return policy.Verdict{}, false
	}
	args, verr := checkArgs(e.in, c.Args)
	if verr != nil {
		return policy.Verdict{}, false
	}
	a, err := e.spec.action(ctx, args)
	if err != nil {
		return policy.Verdict{}, false
	}
	return r.gate.Decide(ctx, c, a), true
}

// errCharged marks a failure that happened after the cost was paid.
type errCharged struct{ error }

func (e errCharged) Unwrap() error { return e.error }

func costIfRun(s Spec, err error) Cost {
	var c errCharged
	if errors.As(err, &c) {
		return s.Cost
	}
	return Cost{}
}

// run does precondition, charge and handler, turning a panic into EINTERNAL.
func (r *Registry) run(ctx context.Context, s Spec, args json.RawMessage, charge func(Cost) error) (res Result, internal string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Errorf(EINTERNAL, false, ActStop, "tool %s failed unexpectedly; this is not caused by the arguments", s.Name)
			internal = fmt.Sprintf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	if err := ctx.Err(); err != nil {
		return Result{}, "", err
	}
	if s.Precondition != nil {
		if err := s.Precondition(ctx, args); err != nil {
			var te *Error
			if !errors.As(err, &te) {
				err = &Error{Code: EPRECONDITION, Message: err.Error(), SuggestedAction: ActStop, err: err}
			}
			return Result{}, "", err
		}
	}
	if charge != nil && (s.Cost != Cost{}) {
		if err := charge(s.Cost); err != nil {
			return Result{}, "", &Error{Code: EBUDGET, Message: "the session's budget cannot pay for this call: " + err.Error(),
				SuggestedAction: ActStop, err: err}
		}
	}
	res, err = s.Handler(ctx, args)
	if err != nil {
		return Result{}, "", errCharged{err}
	}
	return res, "", nil
}

func (r *Registry) names() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var n []string
	for _, name := range r.order {
		if r.grants[r.tools[name].spec.Scope] {
			n = append(n, name)
		}
	}
	slices.Sort(n)
	b, _ := json.Marshal(n)
	return string(b)
}
