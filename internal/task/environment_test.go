package task

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadEnvironment: task.yaml's environment names a template or embeds a
// build spec; tasks with the same spec share one template name.
func TestLoadEnvironment(t *testing.T) {
	load := func(t *testing.T, env string) (*Task, error) {
		t.Helper()
		dir := writeFixture(t)
		writeYAML(t, dir, strings.Replace(fixtureYAML, "result_format:", env+"\nresult_format:", 1))
		return Load(dir)
	}
	tk, err := load(t, "environment: python-pytest")
	if err != nil || tk.Environment.Template != "python-pytest" || tk.Environment.Spec != nil || tk.Environment.TemplateName() != "python-pytest" {
		t.Fatalf("named: %+v %v", tk, err)
	}
	spec := "environment:\n  base: {debian: {suite: bookworm, include: [python3, python3-toml]}}\n  env: {A: \"1\"}"
	a, err := load(t, spec)
	if err != nil || a.Environment.Spec == nil || a.Environment.Spec.Base.Debian.Include[1] != "python3-toml" {
		t.Fatalf("spec: %+v %v", a, err)
	}
	b, _ := load(t, spec)
	c, _ := load(t, strings.Replace(spec, "python3-toml", "python3-yaml", 1))
	if n := a.Environment.TemplateName(); !strings.HasPrefix(n, "task-") || len(n) != 21 || n != b.Environment.TemplateName() || n == c.Environment.TemplateName() {
		t.Fatalf("template names %q %q %q", n, b.Environment.TemplateName(), c.Environment.TemplateName())
	}
	if tk, _ := load(t, ""); tk.Environment.TemplateName() != "" {
		t.Fatalf("no environment: %+v", tk.Environment)
	}
	for _, tc := range []struct{ name, yaml, msg string }{
		{"bad name", "environment: Python", `image name "Python"`},
		{"bad spec", "environment: {base: {debian: bookworm}, steps: [{npm: [left-pad]}]}", "steps[0].npm[0]"},
		{"no base", "environment: {steps: [{run: x}]}", "base: missing"},
		{"unknown field", "environment: {base: {host: true}, stepz: []}", "stepz"},
		// A copy step would read the task directory, hidden tests and reference included.
		{"copy", "environment: {base: {host: true}, steps: [{copy: {src: hidden, dst: /opt/h}}]}", "copy steps are not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml)
			var te *Error
			if !errors.As(err, &te) || !strings.Contains(err.Error(), "environment") || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want a task error about environment saying %q", err, tc.msg)
			}
		})
	}
}
