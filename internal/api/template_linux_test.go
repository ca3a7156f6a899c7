package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/image"
	"github.com/agentbox/agentbox/internal/testenv"
)

const templateConfig = `
tenants:
  a: {templates: {use: [base], build: [app, "app:2"]}}
  b: {templates: {use: [other]}}
tokens:
  - {name: a-admin, token: ` + tokA + `, tenant: a, scopes: [admin]}
  - {name: a-create, token: ` + tokARead + `, tenant: a, scopes: ["env:create"]}
  - {name: b-admin, token: ` + tokB + `, tenant: b, scopes: [admin]}
`

// templateHarness serves an in-memory environment service and a real image
// store holding "base" (a random two-layer image) and "secret" (another that
// no tenant may use).
func templateHarness(t *testing.T) (*harness, *image.Store) {
	t.Helper()
	testenv.RequireRoot(t) // the image store needs root
	dir := t.TempDir()
	store, err := image.OpenStore(filepath.Join(dir, "image"), image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"base", "secret"} {
		img, err := random.Image(1024, 2)
		if err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(dir, n+".tar")
		tag, _ := name.NewTag("example.test/" + n + ":1")
		if err := tarball.WriteToFile(archive, tag, img); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Import(context.Background(), "docker-archive:"+archive, image.ImportOptions{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte(templateConfig), "")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, mem: newMem(), log: &syncBuffer{}}
	h.srv, err = New(Options{Config: cfg, Service: h.mem, Templates: store, Logger: slog.New(slog.NewTextHandler(h.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h.ts = httptest.NewServer(h.srv.Handler())
	t.Cleanup(h.ts.Close)
	return h, store
}

// TestTemplatesAPI: a tenant lists and inspects only the templates it may use,
// builds only names it may build, from specs that read nothing of the host's.
func TestTemplatesAPI(t *testing.T) {
	h, store := templateHarness(t)
	list := func(tok string) []string {
		t.Helper()
		st, _, body := h.do("GET", "/v1/templates", tok, nil)
		var out struct{ Templates []client.Template }
		if st != 200 || json.Unmarshal(body, &out) != nil {
			t.Fatalf("list: %d %s", st, body)
		}
		var names []string
		for _, tp := range out.Templates {
			names = append(names, tp.Name)
		}
		return names
	}
	if l, err := h.client(tokARead).Templates(context.Background()); err != nil || len(l) != 1 || l[0].Name != "base" || l[0].Layers != 2 {
		t.Fatalf("client.Templates: %+v %v", l, err)
	}
	if got := list(tokARead); fmt.Sprint(got) != "[base]" {
		t.Fatalf("tenant a lists %v, want [base] (not secret)", got)
	}
	if got := list(tokB); len(got) != 0 {
		t.Fatalf("tenant b lists %v", got)
	}
	st, _, body := h.do("GET", "/v1/templates/base", tokARead, nil)
	var info client.TemplateInfo
	if st != 200 || json.Unmarshal(body, &info) != nil || info.Name != "base" || info.Layers != 2 || len(info.LayerInfo) != 2 || info.LayerInfo[0].DiffID == "" {
		t.Fatalf("inspect base: %d %s", st, body)
	}
	// Another tenant's template, and one that does not exist, look the same.
	_, _, secret := h.do("GET", "/v1/templates/secret", tokA, nil)
	_, _, none := h.do("GET", "/v1/templates/nothing", tokA, nil)
	if !strings.Contains(string(secret), `"ENOENT"`) || strings.ReplaceAll(string(secret), "secret", "X") != strings.ReplaceAll(string(none), "nothing", "X") {
		t.Fatalf("secret %s, none %s", secret, none)
	}

	build := func(tok, name, spec string) (int, []byte) {
		t.Helper()
		st, _, body := h.do("POST", "/v1/templates", tok, []byte(`{"name":"`+name+`","spec":`+spec+`}`))
		return st, body
	}
	okSpec := `{"base":{"image":"base"},"env":{"APP":"1"},"workdir":"/workspace"}`
	if st, body := build(tokA, "app", okSpec); st != 201 || !strings.Contains(string(body), `"APP=1"`) || !strings.Contains(string(body), `"workdir":"/workspace"`) {
		t.Fatalf("build app: %d %s", st, body)
	}
	ti, err := h.client(tokA).BuildTemplate(context.Background(), client.BuildTemplateRequest{Name: "app", Spec: map[string]any{"base": map[string]any{"image": "base"}, "env": map[string]any{"APP": "1"}, "workdir": "/workspace"}})
	if err != nil || ti.Build == nil || ti.Build.Base == "" || ti.WorkingDir != "/workspace" {
		t.Fatalf("client.BuildTemplate again: %+v %v", ti, err)
	}
	if ti2, err := h.client(tokA).InspectTemplate(context.Background(), "app"); err != nil || ti2.ID != ti.ID {
		t.Fatalf("client.InspectTemplate: %+v %v", ti2, err)
	}
	if got := list(tokA); fmt.Sprint(got) != "[app base]" {
		t.Fatalf("after build, tenant a lists %v", got)
	}
	for _, tc := range []struct {
		name, tok, tpl, spec string
		status               int
		msg                  string
	}{
		{"scope", tokARead, "app", okSpec, 403, `\"admin\" scope`},
		{"name not ours", tokA, "base", okSpec, 403, `may not build template \"base\"`},
		{"other tenant", tokB, "app", okSpec, 403, "may not build"},
		{"bad name", tokA, "App", okSpec, 400, `image name \"App\"`},
		{"copy reads host files", tokA, "app", `{"base":{"image":"base"},"steps":[{"copy":{"src":"etc","dst":"/x"}}]}`, 403, "copy steps read the daemon host's files"},
		{"archive source", tokA, "app", `{"base":{"image":"docker-archive:/etc/shadow"}}`, 403, "sources (archives, layouts, registries)"},
		{"registry source", tokA, "app", `{"base":{"image":"registry:127.0.0.1:5000/x"}}`, 403, "sources (archives, layouts, registries)"},
		{"foreign base", tokA, "app", `{"base":{"image":"secret"}}`, 403, "not a template this tenant may use"},
		{"base by id", tokA, "app", `{"base":{"image":"sha256:` + strings.Repeat("a", 64) + `"}}`, 403, "not a template this tenant may use"},
		{"mirror", tokA, "app", `{"base":{"debian":{"suite":"bookworm","mirror":"http://127.0.0.1:9/debian"}}}`, 403, "only Debian's archive"},
		{"bad spec", tokA, "app", `{"base":{"image":"base"},"steps":[{"npm":["left-pad"]}]}`, 400, "steps[0].npm[0]"},
		{"unknown field", tokA, "app", `{"base":{"image":"base"},"stepz":[]}`, 400, "stepz"},
		{"no runner", tokA, "app:2", `{"base":{"image":"base"},"steps":[{"run":"true"}]}`, 400, "build sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := build(tc.tok, tc.tpl, tc.spec)
			if st != tc.status || !strings.Contains(string(body), tc.msg) {
				t.Fatalf("%d %s, want %d and %q", st, body, tc.status, tc.msg)
			}
			if strings.Contains(string(body), "/image/") {
				t.Fatalf("a host path leaks: %s", body)
			}
		})
	}

	// Environments: a template the tenant may not use is refused as a missing one.
	_, err = h.client(tokB).Create(context.Background(), client.CreateRequest{Preset: "t", Template: "base"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != client.CodeInvalid || !strings.Contains(ce.Message, `no template "base"`) {
		t.Fatalf("tenant b creating on base: %v", err)
	}
	e, err := h.client(tokA).Create(context.Background(), client.CreateRequest{Preset: "t", Template: "base"})
	if err != nil || e.Template != "base" {
		t.Fatalf("tenant a creating on base: %+v %v", e, err)
	}

	if st, _, body := h.do("DELETE", "/v1/templates/base", tokA, nil); st != 403 {
		t.Fatalf("deleting a template the tenant only uses: %d %s", st, body)
	}
	if st, _, body := h.do("DELETE", "/v1/templates/secret", tokA, nil); st != 404 {
		t.Fatalf("deleting another's template: %d %s", st, body)
	}
	if err := h.client(tokA).RemoveTemplate(context.Background(), "app"); err != nil {
		t.Fatalf("delete app: %v", err)
	}
	if _, err := store.Inspect("app"); err == nil {
		t.Fatal("app still named after delete")
	}
	if _, err := store.Inspect("secret"); err != nil {
		t.Fatalf("secret: %v", err)
	}
}
