package api_test

import (
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/api"
	"github.com/agentbox/agentbox/internal/config"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/mcp"
)

type openAPI struct {
	Paths      map[string]map[string]any `yaml:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties map[string]any `yaml:"properties"`
			Required   []string       `yaml:"required"`
		} `yaml:"schemas"`
	} `yaml:"components"`
}

func loadOpenAPI(t *testing.T) openAPI {
	t.Helper()
	b, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPI
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPIMatchesRoutes: every route the server serves is described, and every
// described operation is served (method and path pattern, both directions).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	var described []string
	methods := []string{"get", "put", "post", "delete", "patch", "head", "options"}
	for p, item := range doc.Paths {
		for k := range item {
			if slices.Contains(methods, k) {
				described = append(described, strings.ToUpper(k)+" "+p)
			}
		}
	}
	s, err := api.New(api.Options{Config: config.Local("local-token-0123456789"), Service: struct{ env.Service }{}})
	if err != nil {
		t.Fatal(err)
	}
	mcp.Mount(s, mcp.Options{Service: s.Service()}, nil) // as agentbox serve does
	var served []string
	for _, r := range s.Routes() {
		served = append(served, r.Method+" "+r.Pattern)
	}
	sort.Strings(described)
	sort.Strings(served)
	if !slices.Equal(described, served) {
		for _, d := range described {
			if !slices.Contains(served, d) {
				t.Errorf("described but not served: %s", d)
			}
		}
		for _, r := range served {
			if !slices.Contains(described, r) {
				t.Errorf("served but not described: %s", r)
			}
		}
	}
	if len(served) < 25 {
		t.Fatalf("only %d routes", len(served))
	}
}

// TestOpenAPISchemasMatchWireTypes: each component schema has exactly the JSON
// fields of the Go wire type, and requires exactly the fields Go always sends.
func TestOpenAPISchemasMatchWireTypes(t *testing.T) {
	doc := loadOpenAPI(t)
	for name, typ := range map[string]any{
		"Error": client.Error{}, "Owner": client.Owner{}, "Limits": client.Limits{},
		"CreateRequest": client.CreateRequest{}, "Environment": client.Environment{}, "PauseRequest": client.PauseRequest{},
		"ExecRequest": client.ExecRequest{}, "Result": client.Result{}, "Process": client.Process{},
		"Event": client.Event{}, "SignalRequest": client.SignalRequest{}, "FileEntry": client.FileEntry{},
		"PatchRequest": client.PatchRequest{}, "PatchReport": client.PatchReport{},
		"StrReplaceRequest": client.StrReplaceRequest{}, "ExportRequest": client.ExportRequest{},
		"Artifact": client.Artifact{}, "Template": client.Template{}, "BuildTemplateRequest": client.BuildTemplateRequest{},
	} {
		t.Run(name, func(t *testing.T) {
			sc, ok := doc.Components.Schemas[name]
			if !ok {
				t.Fatalf("no schema %s", name)
			}
			var goFields, alwaysSent, docFields []string
			rt := reflect.TypeOf(typ)
			for i := range rt.NumField() {
				tag := rt.Field(i).Tag.Get("json")
				n, opts, _ := strings.Cut(tag, ",")
				if n == "-" || n == "" {
					continue
				}
				goFields = append(goFields, n)
				if !strings.Contains(opts, "omit") {
					alwaysSent = append(alwaysSent, n)
				}
			}
			for k := range sc.Properties {
				docFields = append(docFields, k)
			}
			sort.Strings(goFields)
			sort.Strings(docFields)
			if !slices.Equal(goFields, docFields) {
				t.Errorf("fields: Go %v, OpenAPI %v", goFields, docFields)
			}
			// Required are exactly the fields Go always sends: a client generated
			// from the document may then rely on every one of them, and must not
			// send an omitempty field the server would take as given.
			required := slices.Sorted(slices.Values(sc.Required))
			sort.Strings(alwaysSent)
			if !slices.Equal(required, alwaysSent) {
				t.Errorf("required: OpenAPI %v, Go always sends %v", required, alwaysSent)
			}
		})
	}
}
