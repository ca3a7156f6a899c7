package sessionapi

import (
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/coordinator"
	"github.com/agentbox/agentbox/internal/journal"
	"github.com/agentbox/agentbox/internal/trace"
)

// TestOpenAPI: api/coordinator.yaml describes every route the server serves
// and no other, and its schemas name exactly the JSON fields of the types the
// server decodes and answers with.
func TestOpenAPI(t *testing.T) {
	b, err := os.ReadFile("../../api/coordinator.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]any `yaml:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var described, served []string
	for p, item := range doc.Paths {
		for k := range item {
			if slices.Contains([]string{"get", "post", "put", "delete", "patch"}, k) {
				described = append(described, strings.ToUpper(k)+" "+p)
			}
		}
	}
	for _, r := range (&Server{}).routes() {
		served = append(served, r.pattern)
	}
	sort.Strings(described)
	sort.Strings(served)
	if !slices.Equal(described, served) {
		t.Errorf("described %v\nserved    %v", described, served)
	}
	for name, v := range map[string]any{"SessionSpec": coordinator.Spec{}, "PolicySpec": coordinator.PolicySpec{},
		"EnvSpec": coordinator.EnvSpec{}, "Budgets": coordinator.Budgets{}, "Session": coordinator.Info{}, "AnswerRequest": AnswerRequest{}, "ResolveRequest": ResolveRequest{}, "SteerRequest": SteerRequest{},
		"PlanItem": trace.PlanItem{}, "Subagent": journal.Subagent{}} {
		var props, fields []string
		for p := range doc.Components.Schemas[name].Properties {
			props = append(props, p)
		}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			fields = append(fields, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
		}
		sort.Strings(props)
		sort.Strings(fields)
		if !slices.Equal(props, fields) {
			t.Errorf("%s: described %v, the Go type has %v", name, props, fields)
		}
	}
}
