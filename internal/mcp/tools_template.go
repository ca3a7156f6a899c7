package mcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
)

// Templates is what the template tools call (a *wire.Templates). Building and
// deleting templates are the operator's and tenant admins' (the API), not an
// agent's.
type Templates interface {
	List(ctx context.Context) ([]client.Template, error)
	Inspect(ctx context.Context, name string) (client.TemplateInfo, error)
}

type templateName struct {
	Name string `json:"name" jsonschema:"template name, as template_list shows it"`
}

type templateListOut struct {
	Templates []client.Template `json:"templates"`
}

// addTemplates adds the template tools when the server has templates to show.
func (t *tools) addTemplates(s *mcp.Server) {
	tpl := t.d.Templates
	if tpl == nil {
		return
	}
	add(t, s, &mcp.Tool{Name: "template_list", Description: "List the templates (root file systems with toolchains, e.g. Python and pytest) this tenant's environments may run on: pass one's name as env_create's template.",
		Annotations: hints("List templates", true, false, true)},
		func(struct{}) string { return "template" },
		func(ctx context.Context, _ struct{}) (templateListOut, error) {
			l, err := tpl.List(ctx)
			return templateListOut{l}, err
		})
	add(t, s, &mcp.Tool{Name: "template_inspect", Description: "Describe a template: its layers, environment variables, working directory, build steps and installed Debian packages.",
		Annotations: hints("Inspect template", true, false, true)},
		func(in templateName) string { return "template " + in.Name },
		func(ctx context.Context, in templateName) (client.TemplateInfo, error) {
			return tpl.Inspect(ctx, in.Name)
		})
}
