package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentbox/agentbox/internal/egress"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/runner"
	"github.com/agentbox/agentbox/internal/workspace"
)

// Service is the part of the environment service the built-in tools call:
// commands (in the background too), the workspace's files, edits and their diff, artifacts, and (for
// OpenEnv) creating and destroying the environment.
type Service interface {
	Create(ctx context.Context, o env.CreateOptions) (env.Info, error)
	Destroy(ctx context.Context, owner env.Owner, id string) error
	Exec(ctx context.Context, owner env.Owner, id string, r env.ExecRequest) (*runner.Result, error)
	// Start, Wait and Signal run exec.run's command in the background, so that
	// its process id is recorded before it is waited for (Progress).
	Start(ctx context.Context, owner env.Owner, id string, r env.ExecRequest) (string, error)
	Wait(ctx context.Context, owner env.Owner, id, procID string) (*runner.Result, error)
	Signal(ctx context.Context, owner env.Owner, id, procID, sig string) error
	ReadFile(ctx context.Context, owner env.Owner, id, path string, offset, length int64) ([]byte, error)
	WriteFile(ctx context.Context, owner env.Owner, id, path string, data []byte) error
	ListDir(ctx context.Context, owner env.Owner, id, path string) ([]workspace.Entry, error)
	Stat(ctx context.Context, owner env.Owner, id, path string) (workspace.Entry, error)
	Mkdir(ctx context.Context, owner env.Owner, id, path string) error
	Remove(ctx context.Context, owner env.Owner, id, path string) error
	// NetworkLog is read for a session's NetworkAccess events (Env.NetworkLog).
	NetworkLog(ctx context.Context, owner env.Owner, id string, after uint64) ([]egress.Event, error)
	// SetNetwork turns the proxy's scan on for a tainted session (Env.ScanEgress).
	SetNetwork(ctx context.Context, owner env.Owner, id string, n env.Network) error
	env.Edits
	env.Artifacts
}

// EnvOptions describe the environment a session works in and the built-in tools
// it gets.
type EnvOptions struct {
	Service Service
	Owner   env.Owner
	// ID, if set, is an existing environment to register the tools on instead
	// of creating one (the options that describe a new one are ignored); Close
	// then leaves it to its owner.
	ID string
	// Workspace (a host directory, used as the read-only lower layer) or Preset
	// names what the environment starts from.
	Workspace string
	Preset    string
	// Template is the root file system (a template in the manager's image
	// store; empty: the host's system directories).
	Template string
	Limits   env.Limits
	TTL      time.Duration
	Labels   map[string]string
	// Network, when set, is what the environment may reach (env.CreateOptions);
	// nil: no network.
	Network *env.Network
	// Mounts are host directories shown outside /workspace (shared caches).
	Mounts []env.Mount
	// Tools configure the built-in tools; Service, Owner and EnvID are filled in.
	Tools BuiltinOptions
	// Scopes granted to the session; nil grants every built-in tool, the
	// mounted MCP tools (Mount) and, with Egress, http.fetch.
	Scopes []string
	// Gate decides every call of the registry (a session's *agent.Permissions); nil: none.
	Gate Gate
	// Egress, if set, configures the host-side egress proxy http.fetch sends
	// through (its Policy is the session's egress allowlist); nil: no
	// http.fetch.
	Egress *egress.Config
}

// Env is a fresh environment with the built-in tools registered on it.
type Env struct {
	ID        string
	Registry  *Registry
	Workspace *Workspace

	svc   Service
	owner env.Owner
	net   *env.Network // as created; nil: no network
	fetch *fetchProxy
	// attached: the environment was not made here (EnvOptions.ID).
	attached bool
}

// OpenEnv creates an environment (with no network unless o.Network gives one),
// or takes the existing one o.ID names, and registers the built-in tools on it.
// Close destroys the one it created.
func OpenEnv(ctx context.Context, o EnvOptions) (*Env, error) {
	if o.Service == nil {
		return nil, errors.New("tool: no environment service")
	}
	info := env.Info{ID: o.ID}
	var err error
	if o.ID == "" {
		info, err = o.Service.Create(ctx, env.CreateOptions{Owner: o.Owner, Workspace: o.Workspace, Preset: o.Preset, Template: o.Template,
			Limits: o.Limits, TTL: o.TTL, Labels: o.Labels, Network: o.Network, Mounts: o.Mounts})
		if err != nil {
			return nil, fmt.Errorf("tool: create environment: %w", err)
		}
	}
	scopes := o.Scopes
	if scopes == nil {
		scopes = append(slices.Clone(BuiltinScopes), ScopeMCP)
		if o.Egress != nil {
			scopes = append(scopes, ScopeNetwork)
		}
	}
	e := &Env{ID: info.ID, svc: o.Service, owner: o.Owner, net: o.Network, attached: o.ID != ""}
	e.Registry = NewRegistry(Options{Scopes: scopes, Gate: o.Gate})
	bo := o.Tools
	bo.Service, bo.Owner, bo.EnvID = o.Service, o.Owner, info.ID
	// With a network the gate judges the hosts exec.run and test.run name.
	bo.Network = bo.Network || o.Network != nil
	if e.Workspace, err = RegisterBuiltins(ctx, e.Registry, bo); err == nil && o.Egress != nil {
		var spec Spec
		if spec, e.fetch, err = openFetch(*o.Egress); err == nil {
			err = e.Registry.Register(spec)
		}
	}
	if err != nil {
		e.Close(ctx)
		return nil, err
	}
	return e, nil
}

// NetworkLog is Options.Network for a session in e, or nil when e has no network.
func (e *Env) NetworkLog() func(ctx context.Context, after uint64) ([]egress.Event, error) {
	if e.net == nil {
		return nil
	}
	return func(ctx context.Context, after uint64) ([]egress.Event, error) {
		return e.svc.NetworkLog(ctx, e.owner, e.ID, after)
	}
}

// ScanEgress is Permissions.ScanEgress for a session in e, or nil when nothing
// of e reaches a network: it turns the egress scan (egress.Scan) on, with values
// the exact strings the session has read, in both proxies a send can go
// through: the sandbox's (it sets the network e was created with, scanning)
// and http.fetch's on the host.
func (e *Env) ScanEgress() func(ctx context.Context, values []string) error {
	if e.net == nil && e.fetch == nil {
		return nil
	}
	return func(ctx context.Context, values []string) error {
		var errs []error
		if e.fetch != nil {
			errs = append(errs, e.fetch.scan(values))
		}
		if e.net != nil {
			n := *e.net
			n.Scan.On, n.Scan.Values = true, slices.Clone(values)
			errs = append(errs, e.svc.SetNetwork(ctx, e.owner, e.ID, n))
		}
		return errors.Join(errs...)
	}
}

// Diff returns the environment's changes as a unified diff.
func (e *Env) Diff(ctx context.Context) ([]byte, error) {
	return e.svc.Diff(ctx, e.owner, e.ID)
}

// Restore brings a fresh environment to the state a diff from its start
// describes (a resumed session's recorded workspace), and recomputes the
// workspace's version.
func (e *Env) Restore(ctx context.Context, diff []byte) error {
	if len(diff) == 0 {
		return nil
	}
	if _, err := e.svc.ApplyPatch(ctx, e.owner, e.ID, diff); err != nil {
		return fmt.Errorf("tool: restore the workspace: %w", err)
	}
	e.Workspace.refresh(ctx)
	return nil
}

// Rewind brings the live workspace back to the state a diff from its start
// describes (nil: the start), in one patch: what it holds now is undone
// (workspace.Reverse of its Diff) and diff applied, all or nothing. A durable
// session rolls back a write a correction made stale with it (agent.Rewinder).
// A change that cannot be reversed (a binary file, a diff cut at its size
// limit) is an error and nothing is changed. A directory holding only empty
// ones where the recorded state has a file (diffs carry no directories) is
// removed and the file made again (workspace.Root.ApplyPatch).
func (e *Env) Rewind(ctx context.Context, diff []byte) error {
	now, err := e.Diff(ctx)
	if err != nil {
		return fmt.Errorf("tool: rewind: %w", err)
	}
	if workspace.Truncated(now) {
		return errors.New("tool: rewind: the workspace's diff is cut at its size limit")
	}
	var patch []byte
	if len(bytes.TrimSpace(now)) > 0 {
		if patch, err = workspace.Reverse(now); err != nil {
			return fmt.Errorf("tool: rewind: %w", err)
		}
	}
	patch = append(patch, diff...)
	if len(bytes.TrimSpace(patch)) == 0 {
		return nil
	}
	if _, err := e.svc.ApplyPatch(ctx, e.owner, e.ID, patch); err != nil {
		return fmt.Errorf("tool: rewind the workspace: %w", err)
	}
	e.Workspace.refresh(ctx)
	return nil
}

// Close destroys the environment OpenEnv created and stops http.fetch's
// proxy, even if ctx is already cancelled.
func (e *Env) Close(ctx context.Context) error {
	if e.attached {
		return e.fetch.close()
	}
	return errors.Join(e.fetch.close(), e.svc.Destroy(context.WithoutCancel(ctx), e.owner, e.ID))
}
