package wire

import (
	"context"
	"encoding/json"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/access"
	"github.com/agentbox/agentbox/internal/image"
)

// Templates is an access.TemplateGuard spoken in the wire types, for the HTTP
// handlers and the MCP tools.
type Templates struct{ g *access.TemplateGuard }

// NewTemplates speaks g's operations in the wire types.
func NewTemplates(g *access.TemplateGuard) *Templates { return &Templates{g: g} }

func (t *Templates) List(ctx context.Context) ([]client.Template, error) {
	list, err := t.g.List(ctx)
	out := []client.Template{}
	for _, s := range list {
		out = append(out, client.Template{Name: s.Name, ID: s.ID.String(), Layers: s.Layers, Bytes: s.Bytes, Source: s.Source, Created: s.Created})
	}
	return out, err
}

func (t *Templates) Inspect(ctx context.Context, name string) (client.TemplateInfo, error) {
	info, err := t.g.Inspect(ctx, name)
	if err != nil {
		return client.TemplateInfo{}, err
	}
	return templateInfo(name, info), nil
}

// Build builds r.Spec as r.Name and describes the result, with this build's
// record (which steps the cache had).
func (t *Templates) Build(ctx context.Context, r client.BuildTemplateRequest) (client.TemplateInfo, error) {
	raw, err := json.Marshal(r.Spec)
	if err != nil || r.Spec == nil {
		return client.TemplateInfo{}, BadRequest("spec: a build spec object is required (base, steps, env, workdir)")
	}
	spec, err := image.ParseSpec(raw) // JSON is YAML
	if err != nil {
		return client.TemplateInfo{}, BadRequest("%v", err)
	}
	rec, err := t.g.Build(ctx, r.Name, spec)
	if err != nil {
		return client.TemplateInfo{}, err
	}
	info, err := t.g.Inspect(ctx, r.Name)
	if err != nil {
		return client.TemplateInfo{}, err
	}
	info.Build = rec.Build
	return templateInfo(r.Name, info), nil
}

func (t *Templates) Remove(ctx context.Context, name string) error { return t.g.Remove(ctx, name) }

func templateInfo(name string, i *image.Info) client.TemplateInfo {
	out := client.TemplateInfo{
		Template: client.Template{Name: name, ID: i.ID.String(), Layers: len(i.Layers), Source: i.Source, Created: i.Created},
		Env:      i.Config.Env, WorkingDir: i.Config.WorkingDir, LayerInfo: []client.TemplateLayer{},
	}
	for _, l := range i.Layers {
		out.Bytes += l.Bytes
		out.LayerInfo = append(out.LayerInfo, client.TemplateLayer{DiffID: l.DiffID.String(), Bytes: l.Bytes, Entries: l.Entries})
	}
	for _, p := range i.Packages {
		out.Packages = append(out.Packages, client.TemplatePackage{Name: p.Name, Version: p.Version, Arch: p.Arch})
	}
	if b := i.Build; b != nil {
		tb := &client.TemplateBuild{Base: b.Base, BaseCached: b.BaseCached, Steps: []client.TemplateBuildStep{}}
		if raw, err := json.Marshal(b.Spec); err == nil {
			json.Unmarshal(raw, &tb.Spec)
		}
		for _, st := range b.Steps {
			tb.Steps = append(tb.Steps, client.TemplateBuildStep{Step: st.Step, Key: st.Key, Layer: st.Layer.String(), Cached: st.Cached})
		}
		out.Build = tb
	}
	return out
}
