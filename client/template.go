package client

import (
	"context"
	"net/http"
	"time"
)

// Template is a root file system an environment can run on (CreateRequest.Template):
// an image of read-only layers in the server's image store.
type Template struct {
	Name    string    `json:"name"`
	ID      string    `json:"id" jsonschema:"image id: the digest of its OCI config"`
	Layers  int       `json:"layers"`
	Bytes   int64     `json:"bytes" jsonschema:"logical size of its layers' files"`
	Source  string    `json:"source" jsonschema:"where it came from: build, or an archive, registry or Debian source"`
	Created time.Time `json:"created"`
}

// TemplateInfo is everything the server says of one template.
type TemplateInfo struct {
	Template
	Env        []string          `json:"env,omitempty" jsonschema:"the image's environment variables"`
	WorkingDir string            `json:"workdir,omitempty"`
	LayerInfo  []TemplateLayer   `json:"layer_info" jsonschema:"its layers, bottom first"`
	Build      *TemplateBuild    `json:"build,omitempty" jsonschema:"what went into a built template"`
	Packages   []TemplatePackage `json:"packages,omitempty" jsonschema:"installed Debian packages"`
}

// TemplateLayer is one layer of a template.
type TemplateLayer struct {
	DiffID  string `json:"diff_id" jsonschema:"digest of the uncompressed layer archive"`
	Bytes   int64  `json:"bytes"`
	Entries int    `json:"entries"`
}

// TemplateBuild is a template's build record: its spec, its base, and per
// step its cache key and layer.
type TemplateBuild struct {
	Spec       map[string]any      `json:"spec" jsonschema:"the build spec as given"`
	Base       string              `json:"base" jsonschema:"what the base resolved to"`
	BaseCached bool                `json:"base_cached,omitempty"`
	Steps      []TemplateBuildStep `json:"steps"`
}

// TemplateBuildStep is one step of a build.
type TemplateBuildStep struct {
	Step   string `json:"step"`
	Key    string `json:"key" jsonschema:"cache key: hash of the parent's key and the step's definition"`
	Layer  string `json:"layer"`
	Cached bool   `json:"cached,omitempty" jsonschema:"the layer came from the build cache"`
}

// TemplatePackage is an installed Debian package.
type TemplatePackage struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch,omitempty"`
}

// BuildTemplateRequest builds a template from a spec (see templates/ in the
// source tree). Over the API a spec's base is a Debian suite, the host, or a
// template the tenant may use; copy steps and host-file or registry sources
// are refused.
type BuildTemplateRequest struct {
	Name string         `json:"name" jsonschema:"template name: lowercase letters, digits, '.', '_', '-', optionally :tag; one the tenant may build"`
	Spec map[string]any `json:"spec" jsonschema:"the build spec: base, steps, env, workdir"`
}

// Templates lists the templates the caller's tenant may use.
func (c *Client) Templates(ctx context.Context) ([]Template, error) {
	var out struct {
		Templates []Template `json:"templates"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/templates", nil, nil, &out)
	return out.Templates, err
}

// InspectTemplate describes the template name.
func (c *Client) InspectTemplate(ctx context.Context, name string) (TemplateInfo, error) {
	var out TemplateInfo
	err := c.do(ctx, http.MethodGet, "/v1/templates/"+esc(name), nil, nil, &out)
	return out, err
}

// BuildTemplate builds r.Spec as r.Name and waits for it (minutes for a cold
// Debian base; a moment when every step is cached).
func (c *Client) BuildTemplate(ctx context.Context, r BuildTemplateRequest) (TemplateInfo, error) {
	var out TemplateInfo
	err := c.do(ctx, http.MethodPost, "/v1/templates", nil, r, &out)
	return out, err
}

// RemoveTemplate removes the template name; environments on it keep it.
func (c *Client) RemoveTemplate(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/templates/"+esc(name), nil, nil, nil)
}
