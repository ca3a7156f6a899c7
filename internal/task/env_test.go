package task

import (
	"slices"
	"strings"
	"testing"
)

// TestGoEnvOnTemplate: a Go task's commands get GOCACHE, GOPATH and
// GOMODCACHE in their scratch directory on the host's root, and keep a
// template's own (its warm module and build cache) on one; offline either way.
func TestGoEnvOnTemplate(t *testing.T) {
	has := func(env []string, prefix string) bool {
		return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, prefix) })
	}
	host := (&Task{Language: Go}).Env("/workspace/s")
	tpl := (&Task{Language: Go, Environment: Environment{Template: "go"}}).Env("/workspace/s")
	for _, k := range []string{"GOCACHE=/workspace/s/", "GOPATH=/workspace/s/", "GOMODCACHE=/workspace/s/"} {
		if !has(host, k) {
			t.Errorf("on the host's root: no %s...: %q", k, host)
		}
		if name, _, _ := strings.Cut(k, "="); has(tpl, name+"=") {
			t.Errorf("on a template: %s overrides the template's: %q", name, tpl)
		}
	}
	for _, env := range [][]string{host, tpl} {
		if !slices.Contains(env, "GOPROXY=off") || !slices.Contains(env, "GOTOOLCHAIN=local") {
			t.Errorf("not offline: %q", env)
		}
	}
}
