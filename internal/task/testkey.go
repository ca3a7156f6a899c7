package task

import (
	"regexp"
	"strings"
	"sync"
)

// djangoIDRE matches a Django-style test id, "test_x (module.Class)" or, as
// Python 3.11's unittest prints it, "test_x (module.Class.test_x)".
var djangoIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([^\s()]+) \(([\w.]+)\)$`) })

// ParseTestKey reduces a test id in any of the forms SWE-bench datasets use to its
// TestKey: a pytest node id (FILE.py::CLASS::NAME[PARAMS], FILE.py::NAME), a
// Django-style id ("NAME (module.Class)", "NAME (module.Class.NAME)"), a dotted
// unittest id (module.Class.NAME), or a bare name (a Go test's TestName, a TAP
// description). It reports false for an empty id and for a Go test's
// IMPORTPATH::TestName, which names one package's test and matches only itself.
//
// The node id's file becomes a dotted module path the way pytest's junit report
// makes its classname: slashes become dots and ".py" goes; parameters, which may
// hold "::" and dots of their own, stay with the name.
func ParseTestKey(id string) (TestKey, bool) {
	if id == "" {
		return TestKey{}, false
	}
	if m := djangoIDRE().FindStringSubmatch(id); m != nil {
		name, where := m[1], m[2]
		return TestKey{Class: strings.TrimSuffix(where, "."+name), Name: name}, true
	}
	head, params, bracket := strings.Cut(id, "[")
	if bracket {
		params = "[" + params
	}
	if file, rest, ok := strings.Cut(head, "::"); ok {
		if !strings.HasSuffix(file, ".py") {
			return TestKey{}, false
		}
		parts := append([]string{strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", ".")}, strings.Split(rest, "::")...)
		last := len(parts) - 1
		return TestKey{Class: strings.Join(parts[:last], "."), Name: parts[last] + params}, true
	}
	if i := strings.LastIndexByte(head, '.'); i > 0 && i < len(head)-1 && !strings.ContainsAny(head, " /") {
		return TestKey{Class: head[:i], Name: head[i+1:] + params}, true
	}
	return TestKey{Name: id}, true
}
