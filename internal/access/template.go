package access

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/image"
)

// Templates is the image store as the API uses it (*image.Store).
type Templates interface {
	List() ([]image.Summary, error)
	Inspect(ref string) (*image.Info, error)
	Build(ctx context.Context, spec *image.Spec, opts image.BuildOptions) (*image.Record, error)
	Remove(name string) error
}

// TemplateGuard checks a caller before each template operation: listing and
// inspecting need env:create and show only the templates its tenant may use
// (tenants.NAME.templates); building and deleting need admin and a name the
// tenant may build. A template the tenant may not see is "no such image",
// whether or not it exists.
type TemplateGuard struct {
	store  Templates
	cfg    *config.Config
	runner image.Runner
}

// NewTemplateGuard wraps store (nil: a server without an image store, which
// lists no template and finds none); runner runs the steps that run commands (nil:
// such builds fail with image.ErrNoRunner).
func NewTemplateGuard(store Templates, cfg *config.Config, runner image.Runner) *TemplateGuard {
	if store == nil {
		store = noTemplates{}
	}
	return &TemplateGuard{store: store, cfg: cfg, runner: runner}
}

// noTemplates is the store of a server that has none.
type noTemplates struct{}

var errNoStore = fmt.Errorf("%w: this server has no image store (it runs as root to have one)", image.ErrNotFound)

func (noTemplates) List() ([]image.Summary, error)      { return nil, nil }
func (noTemplates) Inspect(string) (*image.Info, error) { return nil, errNoStore }
func (noTemplates) Remove(string) error                 { return errNoStore }
func (noTemplates) Build(context.Context, *image.Spec, image.BuildOptions) (*image.Record, error) {
	return nil, errNoStore
}

// caller returns the tenant's template access if the caller holds scope.
func (g *TemplateGuard) caller(ctx context.Context, scope string) (string, config.TemplateAccess, error) {
	c, ok := CallerFrom(ctx)
	if !ok || c.Tenant == "" {
		return "", config.TemplateAccess{}, ErrUnauthenticated
	}
	if !c.Has(scope) {
		return "", config.TemplateAccess{}, &ScopeError{Scope: scope}
	}
	return c.Tenant, g.cfg.Tenants[c.Tenant].Templates, nil
}

// List returns the templates the caller's tenant may use.
func (g *TemplateGuard) List(ctx context.Context) ([]image.Summary, error) {
	_, a, err := g.caller(ctx, config.ScopeEnvCreate)
	if err != nil {
		return nil, err
	}
	all, err := g.store.List()
	if err != nil {
		return nil, err
	}
	var out []image.Summary
	for _, s := range all {
		if a.MayUse(s.Name) {
			out = append(out, s)
		}
	}
	return out, nil
}

// Inspect describes a template the caller's tenant may use; the other names
// the image goes by are left out.
func (g *TemplateGuard) Inspect(ctx context.Context, name string) (*image.Info, error) {
	_, a, err := g.caller(ctx, config.ScopeEnvCreate)
	if err != nil {
		return nil, err
	}
	if err := checkTemplateName(name); err != nil {
		return nil, err
	}
	if !a.MayUse(name) {
		return nil, fmt.Errorf("%w: %s", image.ErrNotFound, name)
	}
	info, err := g.store.Inspect(name)
	if err != nil {
		return nil, err
	}
	info.Names = []string{name}
	return info, nil
}

// Build builds spec as template name, for a tenant that may build that name,
// from a spec that reads nothing of the host's but what the operator put in
// the store (ParseSpec has checked the rest).
func (g *TemplateGuard) Build(ctx context.Context, name string, spec *image.Spec) (*image.Record, error) {
	tenant, a, err := g.caller(ctx, config.ScopeAdmin)
	if err != nil {
		return nil, err
	}
	if err := checkTemplateName(name); err != nil {
		return nil, err
	}
	if !a.MayBuild(name) {
		return nil, fmt.Errorf("%w: tenant %q may not build template %q (config: tenants.%s.templates.build)", ErrForbidden, tenant, name, tenant)
	}
	if err := remoteSpec(spec, a); err != nil {
		return nil, err
	}
	return g.store.Build(ctx, spec, image.BuildOptions{Name: name, Runner: g.runner})
}

// Remove deletes template name (its layers stay while environments use it).
func (g *TemplateGuard) Remove(ctx context.Context, name string) error {
	tenant, a, err := g.caller(ctx, config.ScopeAdmin)
	if err != nil {
		return err
	}
	if err := checkTemplateName(name); err != nil {
		return err
	}
	if !a.MayBuild(name) {
		if a.MayUse(name) {
			return fmt.Errorf("%w: tenant %q may not delete template %q (config: tenants.%s.templates.build)", ErrForbidden, tenant, name, tenant)
		}
		return fmt.Errorf("%w: %s", image.ErrNotFound, name)
	}
	return g.store.Remove(name)
}

// ErrBadTemplate is matched by a template name or spec the API refuses.
var ErrBadTemplate = errors.New("invalid template")

func checkTemplateName(name string) error {
	if err := image.CheckName(name); err != nil {
		return fmt.Errorf("%w: %v", ErrBadTemplate, err)
	}
	return nil
}

// remoteSpec refuses what a spec sent over the API must not do: read the
// daemon host's files (copy steps; docker-archive, oci-archive and oci
// sources), make the daemon reach a registry or mirror the caller chose
// (registry sources; a Debian mirror other than Debian's archive), or build
// on a template its tenant may not use.
func remoteSpec(spec *image.Spec, a config.TemplateAccess) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: build spec: %s", ErrForbidden, fmt.Sprintf(format, args...))
	}
	b := spec.Base
	switch {
	case b.Image != "":
		if _, err := image.ParseSource(b.Image); err == nil {
			return refuse("base.image %q: over the API a base is a template, a Debian suite or the host; sources (archives, layouts, registries) are imported by the operator with agentbox template build --from", b.Image)
		}
		if strings.HasPrefix(b.Image, "sha256:") || !a.MayUse(b.Image) {
			return refuse("base.image %q: not a template this tenant may use", b.Image)
		}
	case b.Debian != nil:
		if b.Debian.Mirror != "" && b.Debian.Mirror != image.DefaultMirror {
			return refuse("base.debian.mirror %q: over the API only Debian's archive (%s) is used", b.Debian.Mirror, image.DefaultMirror)
		}
	}
	for i, st := range spec.Steps {
		if st.Copy != nil {
			return refuse("steps[%d].copy: copy steps read the daemon host's files; over the API use apt, npm, go_modules or run", i)
		}
	}
	return nil
}
