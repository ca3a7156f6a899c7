package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/tool"
)

// EnvOptions describe the environment a session works in and the built-in tools
// it gets.
type EnvOptions struct {
	Service env.Service
	Owner   env.Owner
	// Workspace (a host directory, used as the read-only lower layer) or Template
	// names what the environment starts from.
	Workspace string
	Template  string
	Limits    env.Limits
	TTL       time.Duration
	Labels    map[string]string
	// Tools configure the built-in tools; Service, Owner and EnvID are filled in.
	Tools tool.BuiltinOptions
	// Scopes granted to the session; nil grants every built-in tool.
	Scopes []string
}

// Env is a fresh environment with the built-in tools registered on it.
type Env struct {
	ID        string
	Registry  *tool.Registry
	Workspace *tool.Workspace

	svc   env.Service
	owner env.Owner
}

// OpenEnv creates an environment with network "none" and registers the built-in
// tools on it. Close destroys it.
func OpenEnv(ctx context.Context, o EnvOptions) (*Env, error) {
	if o.Service == nil {
		return nil, errors.New("agent: no environment service")
	}
	info, err := o.Service.Create(ctx, env.CreateOptions{Owner: o.Owner, Workspace: o.Workspace, Template: o.Template,
		Limits: o.Limits, Network: "none", TTL: o.TTL, Labels: o.Labels})
	if err != nil {
		return nil, fmt.Errorf("agent: create environment: %w", err)
	}
	scopes := o.Scopes
	if scopes == nil {
		scopes = tool.BuiltinScopes
	}
	reg := tool.NewRegistry(tool.Options{Scopes: scopes})
	bo := o.Tools
	bo.Service, bo.Owner, bo.EnvID = o.Service, o.Owner, info.ID
	ws, err := tool.RegisterBuiltins(ctx, reg, bo)
	if err != nil {
		_ = o.Service.Destroy(context.WithoutCancel(ctx), o.Owner, info.ID)
		return nil, err
	}
	return &Env{ID: info.ID, Registry: reg, Workspace: ws, svc: o.Service, owner: o.Owner}, nil
}

// Diff returns the environment's changes as a unified diff.
func (e *Env) Diff(ctx context.Context) ([]byte, error) {
	return e.svc.Diff(ctx, e.owner, e.ID)
}

// Close destroys the environment, even if ctx is already cancelled.
func (e *Env) Close(ctx context.Context) error {
	return e.svc.Destroy(context.WithoutCancel(ctx), e.owner, e.ID)
}
