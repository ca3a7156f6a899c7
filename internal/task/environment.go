package task

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/agentbox/agentbox/internal/image"
)

// Environment is the root file system a task runs on, agent and grader alike:
// a template in the image store by name, or a build spec embedded in task.yaml
// (built once into the template SpecTemplate names, then reused). The zero
// value is the host's system directories.
type Environment struct {
	Template string
	Spec     *image.Spec
}

// TemplateName is the template the task's environments start from: Template,
// or for an embedded spec "task-" and the first 16 hex digits of the spec's
// digest, so every task with the same spec shares one template (and every
// build of it after the first is fully cached).
func (e Environment) TemplateName() string {
	if e.Spec == nil {
		return e.Template
	}
	b, _ := json.Marshal(e.Spec)
	sum := sha256.Sum256(b)
	return "task-" + hex.EncodeToString(sum[:8])
}

// environment reads task.yaml's environment: a template name, or a mapping
// that is a build spec.
func (l *loader) environment(t *Task, n *yaml.Node) error {
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if err := image.CheckName(n.Value); err != nil {
			return l.errf("environment", "%v; or give a build spec (base, steps) as a mapping", err)
		}
		t.Environment.Template = n.Value
		return nil
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return l.errf("environment", "%v", err)
	}
	spec, err := image.ParseSpec(b)
	if err != nil {
		return l.errf("environment", "%v", err)
	}
	for i, st := range spec.Steps {
		if st.Copy != nil {
			// The spec's directory would be the task directory, hidden tests and all.
			return l.errf("environment", "steps[%d]: copy steps are not allowed in a task's spec: the task directory holds the hidden tests; build a template with agentbox template build and name it here", i)
		}
	}
	t.Environment.Spec = spec
	return nil
}

// Ensure makes the task's template exist in s and returns its name ("" for the
// host's system directories): an embedded spec is built (every step after the
// first build comes from the cache; runner runs its steps that run commands),
// a named template must be there already.
func (e Environment) Ensure(ctx context.Context, s *image.Store, runner image.Runner, log io.Writer) (string, error) {
	name := e.TemplateName()
	switch {
	case name == "":
		return "", nil
	case s == nil:
		return "", fmt.Errorf("task environment %s: no image store (templates need root)", name)
	case e.Spec != nil:
		if _, err := s.Build(ctx, e.Spec, image.BuildOptions{Name: name, Runner: runner, Log: log}); err != nil {
			return "", fmt.Errorf("task environment: %w", err)
		}
	default:
		if _, err := s.Inspect(name); err != nil {
			return "", fmt.Errorf("task environment: %w (build it with agentbox template build --name %s)", err, name)
		}
	}
	return name, nil
}
